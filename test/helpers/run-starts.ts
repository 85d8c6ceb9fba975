// Concurrent run starts against any blob store: the config and a dataset uploaded as `toolrl submit` uploads
// them, then N run-starters handling the dataset's notification while the first one submits the learner
// (duplicate deliveries, a redelivery while run.json says `starting`, two workers).
import { stringify as toYaml } from 'yaml';
import { encodeDataset } from '#shared/data/dataset';
import { LeaseHeldError } from '#shared/pipeline/learner-lease';
import { type RunStarterContext, startRunFromUpload } from '#shared/pipeline/stages/run-starter';
import type { BlobStore } from '#shared/ports/blob-store';
import { silentLog } from '#shared/ports/log';
import { keys } from '#shared/topology';

export interface ConcurrentStarts {
  /** learnerJobs.submit calls, in order. */
  readonly submitted: string[];
  /** How the first round of starters ended: `ok`, or `retry` (LeaseHeldError: the event is retried). */
  readonly firstRound: ('ok' | 'retry')[];
  /** How the retried ones ended, once the submitter had recorded its job. */
  readonly retried: ('ok' | 'retry')[];
}

export async function concurrentStarts(
  blobs: BlobStore,
  runId: string,
  starters: number,
): Promise<ConcurrentStarts> {
  await blobs.put(
    keys.config(runId),
    toYaml({
      name: 'lease',
      model: { path: 'tiny' },
      data: { train: 'train.parquet' },
      trainer: { batch_prompts: 1 },
    }),
  );
  const key = `${keys.inputPrefix(runId)}train.parquet`;
  await blobs.put(
    key,
    encodeDataset([
      {
        data_source: 'calc',
        prompt: [{ role: 'user', content: 'What is 2 + 2?' }],
        extra_info: { index: 0 },
      },
    ]),
  );
  const submitted: string[] = [];
  // The first starter creates the run and is held in its submit until every other starter has either finished its
  // attempt or reached a submit of its own: the others all meet a run that is `starting` (the window a duplicate
  // event or a redelivery hits), on any machine. With no lease every one of them submits.
  let arrived = 0;
  let open = () => {};
  const everyoneThere = new Promise<void>((r) => {
    open = r;
  });
  const arrive = () => {
    if (++arrived === starters) open();
  };
  let firstInSubmit = () => {};
  const submitting = new Promise<void>((r) => {
    firstInSubmit = r;
  });
  const ctx: RunStarterContext = {
    blobs,
    queues: {},
    log: silentLog,
    now: () => new Date(),
    learnerJobs: {
      submit: async (run) => {
        submitted.push(`job-${submitted.length + 1} for ${run.runId}`);
        const jobId = `job-${submitted.length}`;
        firstInSubmit();
        arrive();
        await everyoneThere;
        return { jobId };
      },
    },
  };
  const once = () =>
    startRunFromUpload(ctx, key).then(
      () => 'ok' as const,
      (err) => {
        if (err instanceof LeaseHeldError) return 'retry' as const;
        throw err;
      },
    );
  const first = once();
  await submitting;
  // A starter that submitted has arrived already (its arrival once the gate is open counts for nothing).
  const others = await Promise.all(Array.from({ length: starters - 1 }, () => once().finally(arrive)));
  const firstRound = [await first, ...others];
  const retried: ('ok' | 'retry')[] = [];
  for (const r of firstRound) if (r === 'retry') retried.push(await once());
  return { submitted, firstRound, retried };
}
