// Lambda entry of the reward stage (environment parsed once, at cold start).
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { createRewardHandler } from '#shared/pipeline/handlers';
import { RunResources } from '#shared/pipeline/run-resources';

const ctx = awsStageContext('reward');
export const handler = createRewardHandler({
  ...ctx,
  resources: new RunResources(ctx.blobs, { scratchDir: ctx.scratchDir }),
});
