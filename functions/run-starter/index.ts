// Lambda entry of the run-starter (environment parsed once, at cold start).
import { awsRunStarterContext } from '#shared/adapters/aws/stage-context';
import { createRunStarterHandler } from '#shared/pipeline/stages/handlers';

export const handler = createRunStarterHandler(awsRunStarterContext());
