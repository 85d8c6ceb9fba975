// The run-starter function: each record is S3's notification of a dataset upload; start or fail that run.
import { sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { handleRunEvent, type RunStarterContext } from '#shared/pipeline/run-starter';
import { RunEventSchema } from '#shared/schemas/messages/run-event';
import { QUEUES } from '#shared/topology';

export const createRunStarterHandler = (ctx: RunStarterContext) =>
  sqsBatchHandler(ctx, {
    name: 'run-starter',
    schema: RunEventSchema,
    maxReceiveCount: QUEUES['run-events'].maxReceiveCount,
    handle: (event) => handleRunEvent(ctx, event),
  });
