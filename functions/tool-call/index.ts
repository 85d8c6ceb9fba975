// Lambda entry of the tool-call stage (environment parsed once, at cold start; the tools' API keys are read
// from their secret then, before any tool is built).
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { loadToolSecrets } from '#shared/adapters/aws/tool-secrets';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { RunResources } from '#shared/pipeline/run-resources';
import { createStageHandler } from '#shared/pipeline/stages/handlers';

await loadToolSecrets(process.env[FUNCTION_ENV.toolSecretsId]);
const ctx = awsStageContext('tool-call');
export const handler = createStageHandler('tool-call', {
  ...ctx,
  resources: new RunResources(ctx.blobs, { scratchDir: ctx.scratchDir }),
});
