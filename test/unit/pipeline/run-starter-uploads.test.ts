// Uploads under runs/<runId>/ that cannot start a run end it at once, with the reason in run.json; a JSON Lines
// dataset uploaded by hand starts it like a Parquet one. (The upload contract: config.yaml first, then the files
// it names, the training datasets last.)
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { readJson } from '#shared/pipeline/blob-json';
import { startRunFromUpload } from '#shared/pipeline/stages/run-starter';
import { silentLog } from '#shared/ports/log';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { keys, NOTIFICATIONS } from '#shared/topology';

const FIXTURES = new URL('../../fixtures/data/', import.meta.url).pathname;
const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

function starter() {
  const root = mkdtempSync(join(tmpdir(), 'toolrl-uploads-'));
  roots.push(root);
  const blobs = new FolderBlobStore(root);
  const submitted: string[] = [];
  const ctx = {
    blobs,
    queues: {},
    log: silentLog,
    now: () => new Date('2026-01-01T00:00:00Z'),
    learnerJobs: {
      submit: async (r: RunStatus) => {
        submitted.push(r.runId);
        return { jobId: 'job-1' };
      },
    },
  };
  const status = async (runId: string) =>
    (await readJson(blobs, keys.runJson(runId), RunStatusSchema))?.value;
  return { blobs, ctx, submitted, status };
}

const CONFIG = 'model: {path: tiny}\ndata: {train: train.jsonl}\nreward: {functions: [{name: toolcall}]}\n';
const jsonl = () => readFileSync(join(FIXTURES, 'toolcall.jsonl'));

describe('run-starter: uploads that cannot start a run', () => {
  it('a dataset before its config fails the run, saying what to upload first', async () => {
    const { blobs, ctx, submitted, status } = starter();
    const key = `${keys.inputPrefix('r1')}train.parquet`;
    await blobs.put(key, readFileSync(join(FIXTURES, 'verl-gsm8k.parquet')));
    await startRunFromUpload(ctx, key);
    expect(await status('r1')).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(/config\.yaml is missing: upload the run config before the dataset/),
    });
    expect(submitted).toEqual([]);
  });

  it('a dataset the config does not name fails the run, naming the ones it does', async () => {
    const { blobs, ctx, status } = starter();
    await blobs.put(keys.config('r2'), CONFIG);
    const key = `${keys.inputPrefix('r2')}trian.jsonl`;
    await blobs.put(key, jsonl());
    await startRunFromUpload(ctx, key);
    expect(await status('r2')).toMatchObject({
      status: 'failed',
      reason: `${key} was uploaded, but config.yaml names the datasets runs/r2/input/train.jsonl: upload those (or fix data.train / data.val)`,
    });
  });

  it('a dataset next to input/ rather than in it fails the run', async () => {
    const { blobs, ctx, status } = starter();
    const key = 'runs/r3/train.parquet';
    await blobs.put(key, readFileSync(join(FIXTURES, 'verl-gsm8k.parquet')));
    await startRunFromUpload(ctx, key);
    expect((await status('r3'))?.reason).toMatch(/^runs\/r3\/train\.parquet is not under runs\/r3\/input\//);
  });

  it("the learner's metrics.jsonl of a running run changes nothing", async () => {
    const { blobs, ctx, status } = starter();
    await blobs.put('runs/r4/metrics/metrics.jsonl', '{"step": 1}\n');
    await startRunFromUpload(ctx, 'runs/r4/metrics/metrics.jsonl');
    expect(await status('r4')).toBeUndefined();
  });

  it('a file that is not a dataset under input/ fails the run with the reader’s reason', async () => {
    const { blobs, ctx, status } = starter();
    await blobs.put(keys.config('r5'), CONFIG);
    const key = `${keys.inputPrefix('r5')}train.jsonl`;
    await blobs.put(key, '{"question": "no prompt, no conversation"}\n');
    await startRunFromUpload(ctx, key);
    expect(await status('r5')).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(
        /invalid dataset:[\s\S]*neither verl rows .*, chat lines .* nor ToolBench data/,
      ),
    });
  });
});

describe('run-starter: a JSON Lines dataset uploaded by hand', () => {
  it('notifies the run-starter, and starts the run with its rows', async () => {
    expect(NOTIFICATIONS).toContainEqual({ queue: 'run-events', prefix: 'runs/', suffix: '.jsonl' });
    const { blobs, ctx, submitted, status } = starter();
    await blobs.put(keys.config('r6'), CONFIG);
    const key = `${keys.inputPrefix('r6')}train.jsonl`;
    const local = join(mkdtempSync(join(tmpdir(), 'toolrl-jsonl-')), 'train.jsonl');
    copyFileSync(join(FIXTURES, 'toolcall.jsonl'), local);
    await blobs.put(key, readFileSync(local));
    await startRunFromUpload(ctx, key);
    const run = await status('r6');
    expect(run).toMatchObject({ status: 'running', input: { train: [key] } });
    // One row per non-blank line (the fixture has a blank line between rows, which JSON Lines readers skip).
    expect(run?.totals.trainPrompts).toBe(
      jsonl()
        .toString()
        .split('\n')
        .filter((l) => l.trim()).length,
    );
    expect(submitted).toEqual(['r6']);
  });
});
