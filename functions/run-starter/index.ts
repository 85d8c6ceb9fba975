// Lambda entry of the run-starter (environment parsed once, at cold start).
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { createRunStarterHandler } from '#shared/pipeline/handlers';

const ctx = awsStageContext('run-starter');
export const handler = createRunStarterHandler({ ...ctx, learnerJobs: ctx.learnerJobs! });
