// Lambda entry of the feeder (environment parsed once, at cold start).
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { RunResources } from '#shared/pipeline/run-resources';
import { createStageHandler } from '#shared/pipeline/stages/handlers';

const ctx = awsStageContext('feeder');
export const handler = createStageHandler('feeder', {
  ...ctx,
  resources: new RunResources(ctx.blobs, { scratchDir: ctx.scratchDir }),
});
