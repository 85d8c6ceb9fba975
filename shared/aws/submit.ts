// `toolrl submit`: validates a run config here, then uploads it and every file it names to the environment's
// bucket under runs/<runId>/input/: the config first, the datasets last, because a dataset's upload is the S3
// notification that starts the run (the run-starter waits until every dataset the config names is there).
import { randomBytes } from 'node:crypto';
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import type { AwsClientOptions } from '#shared/adapters/aws/clients';
import { s3Client } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import {
  ConfigError,
  checkInputNames,
  inputName,
  parseRunConfig,
  referencedFiles,
} from '#shared/pipeline/run-config';
import type { RunConfig } from '#shared/schemas/config/run';
import { RunIdSchema } from '#shared/schemas/messages/run-event';
import { keys } from '#shared/topology';
import { clientOptions, type EnvironmentResources, resolveEnvironment } from './environment.ts';

export interface SubmitOptions {
  readonly env: string;
  readonly configPath: string;
  /** Replace the config's `data.train` with these files (paths on this machine). */
  readonly datasets?: readonly string[];
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

/** `calc-grpo-20250101-120000-3f9a`: the config's name, the time, and 4 hex digits so two users never collide. */
export function submittedRunId(config: RunConfig, now = new Date()): string {
  const slug =
    config.name
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'run';
  const t = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `${slug.slice(0, 96)}-${t}-${randomBytes(2).toString('hex')}`;
}

interface PreparedRun {
  readonly configText: string;
  readonly config: RunConfig;
  /** Blob key -> local path, in upload order (other inputs, then val, then train datasets). */
  readonly files: readonly [string, string][];
}

/** Reads and validates the config (with `--dataset` applied) and checks that every file it names exists. */
export function prepareRun(
  configPath: string,
  datasets: readonly string[] | undefined,
  runId: string,
): PreparedRun {
  let text: string;
  try {
    text = readFileSync(configPath, 'utf8');
  } catch (err) {
    throw new ConfigError(`cannot read ${configPath}: ${(err as Error).message}`);
  }
  const configDir = dirname(resolve(configPath));
  const localPaths = new Map<string, string>();
  if (datasets?.length) {
    // The uploaded config names the datasets by the file names they get under input/.
    const doc = parseDocument(text);
    doc.setIn(
      ['data', 'train'],
      datasets.length === 1 ? basename(datasets[0]!) : datasets.map((d) => basename(d)),
    );
    text = doc.toString();
    for (const d of datasets) localPaths.set(basename(d), resolve(d));
  }
  const config = parseRunConfig(text, configPath);
  checkInputNames(config);
  const files = referencedFiles(config);
  const local = (p: string) => localPaths.get(p) ?? (isAbsolute(p) ? p : join(configDir, p));
  const ordered = [...files.other, ...files.val, ...files.train];
  for (const p of ordered) {
    let readable = false;
    try {
      accessSync(local(p), constants.R_OK);
      readable = statSync(local(p)).isFile();
    } catch {}
    if (!readable)
      throw new ConfigError(`${configPath} names ${p}, which is not a readable file (${local(p)})`);
  }
  return {
    configText: text,
    config,
    files: ordered.map((p) => [`${keys.inputPrefix(runId)}${inputName(p)}`, local(p)] as [string, string]),
  };
}

export async function submitRun(o: SubmitOptions): Promise<SubmitResult> {
  const client = o.client ?? clientOptions();
  // Validate everything here before anything is uploaded: a bad config never becomes a failed run.
  const probe = prepareRun(o.configPath, o.datasets, o.runId ?? 'validation');
  const runId = o.runId ?? submittedRunId(probe.config);
  const idCheck = RunIdSchema.safeParse(runId);
  if (!idCheck.success) throw new ConfigError(`run id ${runId}: ${idCheck.error.issues[0]?.message}`);
  const run = prepareRun(o.configPath, o.datasets, runId);

  const resources = await resolveEnvironment(o.env, client);
  const blobs = new S3BlobStore(s3Client(client), resources.bucket);
  if (await blobs.head(keys.config(runId)))
    throw new ConfigError(`run ${runId} already exists in s3://${resources.bucket}`);
  const uploaded: string[] = [];
  await blobs.put(keys.config(runId), run.configText, { contentType: 'application/yaml' });
  uploaded.push(keys.config(runId));
  o.onUpload?.(keys.config(runId), Buffer.byteLength(run.configText));
  for (const [key, path] of run.files) {
    const body = readFileSync(path);
    await blobs.put(key, body);
    uploaded.push(key);
    o.onUpload?.(key, body.length);
  }
  return { runId, bucket: resources.bucket, uploaded, resources };
}
