// The reward function: each record scores one finished trajectory and completes its group at most once.
import { sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { handleRewardRequest, type RewardStageContext } from '#shared/pipeline/reward';
import { RewardRequestSchema } from '#shared/schemas/messages/reward-request';
import { QUEUES } from '#shared/topology';

export const createRewardHandler = (ctx: RewardStageContext) =>
  sqsBatchHandler(ctx, {
    name: 'reward',
    schema: RewardRequestSchema,
    maxReceiveCount: QUEUES.reward.maxReceiveCount,
    handle: (request) => handleRewardRequest(ctx, request),
  });
