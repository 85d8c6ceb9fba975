// Lambda entry of the reward stage (environment parsed once, at cold start).
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { RunResources } from '#shared/pipeline/run-resources';
import { createRewardHandler } from '#shared/pipeline/stages/handlers';

const ctx = awsStageContext('reward');
export const handler = createRewardHandler({
  ...ctx,
  resources: new RunResources(ctx.blobs, { scratchDir: ctx.scratchDir }),
});
