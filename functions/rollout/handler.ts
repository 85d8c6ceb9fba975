// The rollout function: each record starts a group or continues a trajectory with the policy engine.
import { sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { handleRolloutRequest, type RolloutStageContext } from '#shared/pipeline/rollout';
import { RolloutRequestSchema } from '#shared/schemas/messages/rollout-request';
import { QUEUES } from '#shared/topology';

export const createRolloutHandler = (ctx: RolloutStageContext) =>
  sqsBatchHandler(ctx, {
    name: 'rollout',
    schema: RolloutRequestSchema,
    maxReceiveCount: QUEUES.rollout.maxReceiveCount,
    handle: (request) => handleRolloutRequest(ctx, request),
  });
