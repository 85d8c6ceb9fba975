// The feeder function: each record is S3's notification of learner progress (LATEST.json, state.json).
import { sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { type FeederContext, handlePolicyEvent } from '#shared/pipeline/feeder';
import { PolicyEventSchema } from '#shared/schemas/messages/policy-event';
import { QUEUES } from '#shared/topology';

export const createFeederHandler = (ctx: FeederContext) =>
  sqsBatchHandler(ctx, {
    name: 'feeder',
    schema: PolicyEventSchema,
    maxReceiveCount: QUEUES['policy-events'].maxReceiveCount,
    handle: (event) => handlePolicyEvent(ctx, event),
  });
