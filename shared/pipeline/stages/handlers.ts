// The five queue handlers, each a schema plus one stage call wrapped in the partial-batch handler. Lambda's
// entry points (functions/<stage>/index.ts) and the embedded runtime build exactly these, so the code that
// runs in-process is the code that runs on Lambda.

import { type SqsBatchHandler, sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { PolicyEventSchema } from '#shared/schemas/messages/policy-event';
import { RewardRequestSchema } from '#shared/schemas/messages/reward-request';
import { RolloutRequestSchema } from '#shared/schemas/messages/rollout-request';
import { RunEventSchema } from '#shared/schemas/messages/run-event';
import { ToolCallRequestSchema } from '#shared/schemas/messages/tool-call-request';
import { QUEUES } from '#shared/topology';
import { type FeederContext, handlePolicyEvent } from './feeder.ts';
import { handleRewardRequest, type RewardStageContext } from './reward.ts';
import { handleRolloutRequest, type RolloutStageContext } from './rollout.ts';
import { handleRunEvent, type RunStarterContext } from './run-starter.ts';
import { handleToolCallRequest, type ToolCallStageContext } from './tool-call.ts';

export const createRunStarterHandler = (ctx: RunStarterContext): SqsBatchHandler =>
  sqsBatchHandler(ctx, {
    name: 'run-starter',
    schema: RunEventSchema,
    maxReceiveCount: QUEUES['run-events'].maxReceiveCount,
    queue: 'run-events',
    handle: (event) => handleRunEvent(ctx, event),
  });

export const createFeederHandler = (ctx: FeederContext): SqsBatchHandler =>
  sqsBatchHandler(ctx, {
    name: 'feeder',
    schema: PolicyEventSchema,
    maxReceiveCount: QUEUES['policy-events'].maxReceiveCount,
    queue: 'policy-events',
    handle: (event) => handlePolicyEvent(ctx, event),
  });

export const createRolloutHandler = (ctx: RolloutStageContext): SqsBatchHandler =>
  sqsBatchHandler(ctx, {
    name: 'rollout',
    schema: RolloutRequestSchema,
    maxReceiveCount: QUEUES.rollout.maxReceiveCount,
    queue: 'rollout',
    handle: (request, meta) => handleRolloutRequest(ctx, request, meta),
  });

export const createToolCallHandler = (ctx: ToolCallStageContext): SqsBatchHandler =>
  sqsBatchHandler(ctx, {
    name: 'tool-call',
    schema: ToolCallRequestSchema,
    maxReceiveCount: QUEUES['tool-calls'].maxReceiveCount,
    queue: 'tool-calls',
    handle: (request, meta) => handleToolCallRequest(ctx, request, meta),
  });

export const createRewardHandler = (ctx: RewardStageContext): SqsBatchHandler =>
  sqsBatchHandler(ctx, {
    name: 'reward',
    schema: RewardRequestSchema,
    maxReceiveCount: QUEUES.reward.maxReceiveCount,
    queue: 'reward',
    handle: (request, meta) => handleRewardRequest(ctx, request, meta),
  });
