// Lambda entry of the reward stage (environment parsed once, at cold start).
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { RunResources } from '#shared/pipeline/run-resources';
import { createStageHandler } from '#shared/pipeline/stages/handlers';

const ctx = awsStageContext('reward');
export const handler = createStageHandler('reward', {
  ...ctx,
  resources: new RunResources(ctx.blobs, { scratchDir: ctx.scratchDir }),
});
