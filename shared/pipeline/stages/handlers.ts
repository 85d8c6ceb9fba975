// The queue handlers of the stages, one table: each stage's message schema and the stage call, wrapped in the
// partial-batch handler. Lambda's entry points (functions/<stage>/index.ts) and the embedded runtime build exactly
// these, so the code that runs in-process is the code that runs on Lambda. The table is keyed by the topology's
// stages (shared/topology.ts), so a new stage is a compile error here until it has its row.

import type { ZodType } from 'zod';
import { type RecordMeta, type SqsBatchHandler, sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { PolicyEventSchema } from '#shared/schemas/messages/policy-event';
import { RewardRequestSchema } from '#shared/schemas/messages/reward-request';
import { RolloutRequestSchema } from '#shared/schemas/messages/rollout-request';
import { RunEventSchema } from '#shared/schemas/messages/run-event';
import { ToolCallRequestSchema } from '#shared/schemas/messages/tool-call-request';
import { consumedQueue, FUNCTION_NAMES, type FunctionName, QUEUES } from '#shared/topology';
import { type FeederContext, handlePolicyEvent } from './feeder.ts';
import { handleRewardRequest, type RewardStageContext } from './reward.ts';
import { handleRolloutRequest, type RolloutStageContext } from './rollout.ts';
import { handleRunEvent, type RunStarterContext } from './run-starter.ts';
import { handleToolCallRequest, type ToolCallStageContext } from './tool-call.ts';

/** What each stage's handler is given besides its message: its StageContext and the resources it uses. */
export interface StageContexts {
  'run-starter': RunStarterContext;
  feeder: FeederContext;
  rollout: RolloutStageContext;
  'tool-call': ToolCallStageContext;
  reward: RewardStageContext;
}

interface StageRow<C, T> {
  readonly schema: ZodType<T>;
  readonly handle: (ctx: C, message: T, meta: RecordMeta) => Promise<void>;
}

const row = <C, T>(schema: ZodType<T>, handle: StageRow<C, T>['handle']): StageRow<C, unknown> =>
  ({ schema, handle }) as StageRow<C, unknown>;

const STAGES: { readonly [F in FunctionName]: StageRow<StageContexts[F], unknown> } = {
  'run-starter': row(RunEventSchema, handleRunEvent),
  feeder: row(PolicyEventSchema, handlePolicyEvent),
  rollout: row(RolloutRequestSchema, handleRolloutRequest),
  'tool-call': row(ToolCallRequestSchema, handleToolCallRequest),
  reward: row(RewardRequestSchema, handleRewardRequest),
};

/** The queue handler of a stage: its message schema, its stage call, its queue's maxReceiveCount. */
export function createStageHandler<F extends FunctionName>(fn: F, ctx: StageContexts[F]): SqsBatchHandler {
  const stage: StageRow<StageContexts[F], unknown> = STAGES[fn];
  return sqsBatchHandler(ctx, {
    name: fn,
    schema: stage.schema,
    maxReceiveCount: QUEUES[consumedQueue(fn)].maxReceiveCount,
    queue: consumedQueue(fn),
    handle: (message, meta) => stage.handle(ctx, message, meta),
  });
}

/** Every stage's handler, each with its own context. */
export const createStageHandlers = (contexts: StageContexts): Record<FunctionName, SqsBatchHandler> =>
  Object.fromEntries(FUNCTION_NAMES.map((fn) => [fn, createStageHandler(fn, contexts[fn])])) as Record<
    FunctionName,
    SqsBatchHandler
  >;
