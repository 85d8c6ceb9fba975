// Lambda entry of the tool-call stage (environment parsed once, at cold start).
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { createToolCallHandler } from '#shared/pipeline/handlers';
import { RunResources } from '#shared/pipeline/run-resources';

const ctx = awsStageContext('tool-call');
export const handler = createToolCallHandler({
  ...ctx,
  resources: new RunResources(ctx.blobs, { scratchDir: ctx.scratchDir }),
});
