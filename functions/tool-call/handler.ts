// The tool-call function: each record runs the tool calls of one trajectory's last turn.
import { sqsBatchHandler } from '#shared/pipeline/batch-handler';
import { handleToolCallRequest, type ToolCallStageContext } from '#shared/pipeline/tool-call';
import { ToolCallRequestSchema } from '#shared/schemas/messages/tool-call-request';
import { QUEUES } from '#shared/topology';

export const createToolCallHandler = (ctx: ToolCallStageContext) =>
  sqsBatchHandler(ctx, {
    name: 'tool-call',
    schema: ToolCallRequestSchema,
    maxReceiveCount: QUEUES['tool-calls'].maxReceiveCount,
    handle: (request) => handleToolCallRequest(ctx, request),
  });
