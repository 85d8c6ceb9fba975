// Lambda entry of the rollout stage: policies are loaded into /tmp once per container and re-read when
// LATEST.json moves.
import { z } from 'zod';
import { awsStageContext } from '#shared/adapters/aws/stage-context';
import { FUNCTION_ENV, kvCacheBytesFromEnv } from '#shared/deployment/function-env';
import { BlobPolicyProvider } from '#shared/pipeline/policies';
import { RunResources } from '#shared/pipeline/run-resources';
import { createStageHandler } from '#shared/pipeline/stages/handlers';

const ctx = awsStageContext('rollout');
const positive = (name: string) =>
  z.coerce
    .number()
    .int()
    .positive()
    .optional()
    .parse(process.env[name] || undefined);
const threads = positive(FUNCTION_ENV.ortThreads);
const cacheBytes = kvCacheBytesFromEnv();
export const handler = createStageHandler('rollout', {
  ...ctx,
  resources: new RunResources(ctx.blobs, { scratchDir: ctx.scratchDir }),
  policies: new BlobPolicyProvider(ctx.blobs, {
    scratchDir: ctx.scratchDir,
    ...(threads ? { threads } : {}),
    ...(cacheBytes ? { cacheBytes } : {}),
  }),
});
