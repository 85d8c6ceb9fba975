// Starting a run with any S3 client (README "Start a run with any S3 client"): the AWS SDK's own S3 client puts the
// config and then the dataset under runs/<runId>/input/ by their bare names, as a user's script or `aws s3 cp`
// would, with no `toolrl submit`. A `.json` dataset starts the run too (it notifies nothing: the config's upload
// starts the run-starter's watch); an upload that can never start a run ends `failed` with the reason; and `toolrl
// status --watch` started right after the config's upload waits for the run instead of failing.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { readDataset } from '#shared/data/dataset';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';
import { Scenario } from './support/harness.ts';
import { assertLocalStackUp, localstack } from './support/localstack.ts';
import { writeRun } from './support/run-fixture.ts';

let s: Scenario;
let s3: S3Client;
beforeAll(async () => {
  await assertLocalStackUp();
  s = await Scenario.create();
  const { endpoint, region } = localstack();
  // A user's client: the SDK's defaults, LocalStack's endpoint, path-style addressing (LocalStack's buckets have no
  // host names of their own).
  s3 = new S3Client({ endpoint, region, forcePathStyle: true });
  const worker = s.startWorker();
  await worker.waitFor((e) => e.worker === 'ready', 'the worker to start');
});
afterAll(async () => {
  s3?.destroy();
  await s?.close();
});

const put = (key: string, body: string | Uint8Array) =>
  s3.send(new PutObjectCommand({ Bucket: s.resources.bucket, Key: key, Body: body }));

/** `toolrl status RUN --env E --watch 2` as a child; resolves with its exit code and output when it ends. */
function watch(runId: string): {
  child: ChildProcess;
  done: Promise<{ code: number | null; out: string; err: string }>;
} {
  const child = spawn(
    process.execPath,
    [
      '--disable-warning=NodeVersionSupportWarning',
      'bin/toolrl.mjs',
      'status',
      runId,
      '--env',
      s.env,
      '--watch',
      '2',
    ],
    { cwd: REPO_ROOT, env: s.processEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  return { child, done: new Promise((resolve) => child.on('exit', (code) => resolve({ code, out, err }))) };
}

describe('a run started with the AWS SDK S3 client', () => {
  it('config.yaml then a .json dataset (a JSON array of verl rows) starts the run, and status --watch waits for it', async () => {
    // GIVEN a small run whose config names data/train.json, and its rows as `datasets.to_json(lines=False)` writes them
    const run = await writeRun(s.dir, { prompts: 4, groupSize: 2, batchPrompts: 2 });
    const config = parse(readFileSync(run.configPath, 'utf8'));
    config.data.train = 'data/train.json';
    const rows = await readDataset(readFileSync(run.datasetPath));
    const runId = 'sdk-json-1';

    // WHEN the config goes up first, `status --watch` starts, and the dataset goes up under its bare name
    await put(`runs/${runId}/input/config.yaml`, stringify(config));
    const watching = watch(runId);
    await put(`runs/${runId}/input/train.json`, JSON.stringify(rows));

    // THEN the watch waited for the run instead of failing, and ended with it completed (exit 0)
    const r = await watching.done;
    expect(r.code, `${r.out}\n${r.err}`).toBe(0);
    expect(r.out).toMatch(/^status\s+completed/m);
    const status = await s.runStatus(runId);
    expect(status).toMatchObject({
      status: 'completed',
      input: { train: [`runs/${runId}/input/train.json`] },
    });
    expect(status?.totals.trainPrompts).toBe(4);
  });

  it('a .csv next to the config ends the run failed, naming the file and what the config names', async () => {
    const run = await writeRun(s.dir, { prompts: 2 });
    const runId = 'sdk-csv-1';
    await put(`runs/${runId}/input/config.yaml`, readFileSync(run.configPath, 'utf8'));
    await put(`runs/${runId}/input/train.csv`, 'prompt,answer\n"What is 1 plus 1?",2\n');
    const final = await s.waitForEnd(runId);
    expect(final.status).toBe('failed');
    expect(final.reason).toMatch(
      new RegExp(
        `^runs/${runId}/input/train\\.csv was uploaded, but config\\.yaml names the datasets runs/${runId}/input/train\\.parquet: a dataset is \\.parquet, \\.jsonl or \\.json`,
      ),
    );
    // and status says so, exit 1
    const text = await s.toolrl(['status', runId, '--env', s.env]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^status\s+failed: runs\/sdk-csv-1\/input\/train\.csv was uploaded/m);
  });

  it('a dataset kept under its folder (input/data/train.parquet) ends the run failed: the config names input/train.parquet', async () => {
    const run = await writeRun(s.dir, { prompts: 2 });
    const config = parse(readFileSync(run.configPath, 'utf8'));
    config.data.train = 'data/train.parquet';
    const runId = 'sdk-folder-1';
    await put(`runs/${runId}/input/config.yaml`, stringify(config));
    await put(`runs/${runId}/input/data/train.parquet`, readFileSync(join(run.datasetPath)));
    const final = await s.waitForEnd(runId);
    expect(final.status).toBe('failed');
    expect(final.reason).toBe(
      `runs/${runId}/input/data/train.parquet was uploaded, but config.yaml names the datasets runs/${runId}/input/train.parquet: ` +
        'a dataset is .parquet, .jsonl or .json, uploaded under the bare file name data.train / data.val give it ' +
        '(data/train.parquet is input/train.parquet); upload those (or fix the config)',
    );
  });
});
