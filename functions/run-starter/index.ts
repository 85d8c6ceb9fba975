// Lambda entry of the run-starter (environment parsed once, at cold start).
import { awsRunStarterContext } from '#shared/adapters/aws/stage-context';
import { createStageHandler } from '#shared/pipeline/stages/handlers';

export const handler = createStageHandler('run-starter', awsRunStarterContext());
