// `toolrl submit`: validates a run config here (aliases resolved, overrides applied, JSON datasets converted:
// pipeline/run-inputs.ts), then uploads it and every file it names to the environment's bucket under
// runs/<runId>/input/: the config first, the datasets last, because a dataset's upload is the S3 notification
// that starts the run (the run-starter waits until every dataset the config names is there).
import { randomBytes } from 'node:crypto';
import type { AwsClientOptions } from '#shared/adapters/aws/clients';
import { s3Client } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { ConfigError } from '#shared/config/resolve';
import { inputBytes, prepareInputs } from '#shared/pipeline/run-inputs';
import { newRunId, RunIdSchema } from '#shared/schemas/messages/run-event';
import { keys } from '#shared/topology';
import { clientOptions, type EnvironmentResources, resolveEnvironment } from './environment.ts';

export interface SubmitOptions {
  readonly env: string;
  readonly configPath: string;
  /** Replace the config's `data.train` with these files (paths on this machine). */
  readonly datasets?: readonly string[];
  /** Hydra-style `key=value` overrides of the config. */
  readonly overrides?: readonly string[];
  readonly runId?: string;
  readonly client?: AwsClientOptions;
  /** Called after each upload (the CLI prints progress). */
  readonly onUpload?: (key: string, bytes: number) => void;
}

export interface SubmitResult {
  readonly runId: string;
  readonly bucket: string;
  readonly uploaded: readonly string[];
  readonly resources: EnvironmentResources;
}

export async function submitRun(o: SubmitOptions): Promise<SubmitResult> {
  const client = o.client ?? clientOptions();
  // Validate everything here before anything is uploaded: a bad config never becomes a failed run.
  const run = prepareInputs(o.configPath, {
    ...(o.datasets ? { datasets: o.datasets } : {}),
    overrides: o.overrides ?? [],
  });
  const runId = o.runId ?? newRunId(run.config.name, new Date(), randomBytes(2).toString('hex'));
  const idCheck = RunIdSchema.safeParse(runId);
  if (!idCheck.success) throw new ConfigError(`run id ${runId}: ${idCheck.error.issues[0]?.message}`);

  const resources = await resolveEnvironment(o.env, client);
  const blobs = new S3BlobStore(s3Client(client), resources.bucket);
  if (await blobs.head(keys.config(runId)))
    throw new ConfigError(`run ${runId} already exists in s3://${resources.bucket}`);
  const uploaded: string[] = [];
  await blobs.put(keys.config(runId), run.configText, { contentType: 'application/yaml' });
  uploaded.push(keys.config(runId));
  o.onUpload?.(keys.config(runId), Buffer.byteLength(run.configText));
  for (const f of run.files) {
    const key = `${keys.inputPrefix(runId)}${f.name}`;
    const body = inputBytes(f);
    await blobs.put(key, body);
    uploaded.push(key);
    o.onUpload?.(key, body.length);
  }
  return { runId, bucket: resources.bucket, uploaded, resources };
}
