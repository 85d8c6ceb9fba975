// Uploads under runs/<runId>/ that cannot start a run end it at once, with the reason in run.json; a JSON Lines
// or JSON dataset uploaded by hand starts it at the config's next look at its inputs. (The upload contract: config.yaml first, then the files
// it names, the training datasets last.)
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { readJson } from '#shared/pipeline/blob-json';
import { INPUT_WAIT_SEC, inputCheckDelaySec } from '#shared/pipeline/stages/input-check';
import { handleRunEvent, startRunFromUpload } from '#shared/pipeline/stages/run-starter';
import { silentLog } from '#shared/ports/log';
import { notificationTarget } from '#shared/runtime/notifications';
import { InputCheckSchema } from '#shared/schemas/messages/run-event';
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
      reason: expect.stringMatching(
        new RegExp(
          `^${key} was uploaded, but config\\.yaml names the datasets runs/r2/input/train\\.jsonl: .*upload those \\(or fix the config\\)$`,
        ),
      ),
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

describe('run-starter: the watch over a run’s inputs from its config.yaml', () => {
  /** A starter whose run-events queue is a real (embedded) queue, with a clock the test moves. */
  function watched() {
    const s = starter();
    // What the starter sends to its queue, with the delay it asks for (the queue itself is the embedded one).
    const queue = new EmbeddedQueue({ name: 'run-events', visibilityTimeoutSec: 30 });
    const sent: { body: string; delaySec: number | undefined }[] = [];
    const runEvents = Object.create(queue) as EmbeddedQueue;
    runEvents.send = async (body, opts) => {
      sent.push({ body, delaySec: opts?.delaySec });
      return queue.send(body, opts);
    };
    // The clock starts at the real time: the config's age is read from its object's last-modified time.
    let now = new Date();
    const ctx = { ...s.ctx, queues: { 'run-events': runEvents }, now: () => now };
    const advance = (sec: number) => (now = new Date(now.getTime() + sec * 1000));
    /** The last input check sent, as the queue delivers it once its delay has passed. */
    const nextCheck = () => {
      const m = sent.at(-1);
      return m ? { event: InputCheckSchema.parse(JSON.parse(m.body)), delaySec: m.delaySec ?? 0 } : undefined;
    };
    return { ...s, ctx, advance, nextCheck, sent };
  }
  const JSON_CONFIG =
    'model: {path: tiny}\ndata: {train: train.json}\nreward: {functions: [{name: toolcall}]}\n';

  it('the config notifies the run-starter', () => {
    expect(NOTIFICATIONS).toContainEqual({
      queue: 'run-events',
      prefix: 'runs/',
      suffix: 'input/config.yaml',
    });
  });

  it('a JSON Lines dataset, which notifies nothing, starts the run with its rows at the next look', async () => {
    // The learner's metrics.jsonl and batches.jsonl end the same way: a `.jsonl` rule would wake the run-starter
    // at every learner step to do nothing.
    expect(notificationTarget(`${keys.inputPrefix('r6')}train.jsonl`)).toBeUndefined();
    const { blobs, ctx, submitted, status, nextCheck } = watched();
    await blobs.put(keys.config('r6'), CONFIG);
    await startRunFromUpload(ctx, keys.config('r6'));
    expect(await status('r6')).toBeUndefined();
    const key = `${keys.inputPrefix('r6')}train.jsonl`;
    const local = join(mkdtempSync(join(tmpdir(), 'toolrl-jsonl-')), 'train.jsonl');
    copyFileSync(join(FIXTURES, 'toolcall.jsonl'), local);
    await blobs.put(key, readFileSync(local));
    await handleRunEvent(ctx, nextCheck()!.event);
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

  it('a .json dataset, which notifies nothing, starts the run at the next look', async () => {
    // GIVEN a config naming train.json, uploaded first: its event finds the dataset missing and schedules a look
    const { blobs, ctx, submitted, status, nextCheck } = watched();
    await blobs.put(keys.config('j1'), JSON_CONFIG);
    await startRunFromUpload(ctx, keys.config('j1'));
    expect(await status('j1')).toBeUndefined();
    const first = nextCheck();
    expect(first).toMatchObject({ event: { kind: 'input-check', runId: 'j1', check: 1 } });
    expect(first?.delaySec).toBe(inputCheckDelaySec(1));
    // WHEN the dataset (StableToolBench's query file, as published) arrives and the look comes due
    await blobs.put(
      `${keys.inputPrefix('j1')}train.json`,
      readFileSync(join(FIXTURES, 'stabletoolbench-queries.json')),
    );
    await handleRunEvent(ctx, first!.event);
    // THEN the run starts with its rows
    expect(await status('j1')).toMatchObject({
      status: 'running',
      input: { train: ['runs/j1/input/train.json'] },
    });
    expect(submitted).toEqual(['j1']);
  });

  it('a .csv next to the config fails the run at the first look, naming it and what the config names', async () => {
    const { blobs, ctx, status, nextCheck } = watched();
    await blobs.put(keys.config('c1'), CONFIG);
    await startRunFromUpload(ctx, keys.config('c1'));
    await blobs.put(`${keys.inputPrefix('c1')}train.csv`, 'prompt,answer\n"1+1",2\n');
    await handleRunEvent(ctx, nextCheck()!.event);
    expect(await status('c1')).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(
        /^runs\/c1\/input\/train\.csv was uploaded, but config\.yaml names the datasets runs\/c1\/input\/train\.jsonl: a dataset is \.parquet, \.jsonl or \.json/,
      ),
    });
  });

  it('a config that names a .csv fails the run as soon as the config is uploaded', async () => {
    const { blobs, ctx, status } = watched();
    await blobs.put(keys.config('c2'), CONFIG.replace('train.jsonl', 'train.csv'));
    await startRunFromUpload(ctx, keys.config('c2'));
    expect(await status('c2')).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(/"train\.csv" is not a dataset file: use \.parquet, \.jsonl or \.json/),
    });
  });

  it('datasets still missing INPUT_WAIT_SEC after the config fail the run, naming them', async () => {
    const { blobs, ctx, status, nextCheck, advance } = watched();
    await blobs.put(keys.config('m1'), CONFIG);
    await startRunFromUpload(ctx, keys.config('m1'));
    // looks keep coming while the wait lasts
    let check = nextCheck()!;
    for (let i = 0; i < 3; i++) {
      advance(check.delaySec);
      await handleRunEvent(ctx, check.event);
      check = nextCheck()!;
      expect(check.event.check).toBe(i + 2);
    }
    expect(await status('m1')).toBeUndefined();
    advance(INPUT_WAIT_SEC);
    await handleRunEvent(ctx, check.event);
    expect(await status('m1')).toMatchObject({
      status: 'failed',
      reason: expect.stringMatching(
        /^runs\/m1\/input\/train\.jsonl never arrived: config\.yaml names it and was uploaded \d+ min ago/,
      ),
    });
  });
});
