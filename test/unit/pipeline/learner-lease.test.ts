// One learner per run: the run-starter's lease (a conditional write before the submit). Racing starters submit
// once; a lease whose holder died before recording its job is taken over only once it is stale.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { readJson } from '#shared/pipeline/blob-json';
import {
  LEASE_STALE_MS,
  LearnerLeaseSchema,
  LeaseHeldError,
  takeLearnerLease,
} from '#shared/pipeline/learner-lease';
import { silentLog } from '#shared/ports/log';
import { RunStatusSchema } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';
import { concurrentStarts } from '../../helpers/run-starts.ts';

const store = () => new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-lease-')));

describe('the learner lease', () => {
  it('eight run-starters at once (folder store): one submit, the others retry and find its job', async () => {
    const blobs = store();
    const r = await concurrentStarts(blobs, 'r-lease', 8);
    expect(r.submitted).toEqual(['job-1 for r-lease']);
    expect(r.firstRound.filter((x) => x === 'retry')).toHaveLength(7);
    expect(r.retried.every((x) => x === 'ok')).toBe(true);
    const run = (await readJson(blobs, keys.runJson('r-lease'), RunStatusSchema))!.value;
    expect(run).toMatchObject({ status: 'running', learner: { jobId: 'job-1' } });
    const lease = (await readJson(blobs, keys.learnerLease('r-lease'), LearnerLeaseSchema))!.value;
    expect(lease.jobId).toBe('job-1');
  });

  it('a lease whose holder never recorded a job is retried while fresh and taken over once stale', async () => {
    const blobs = store();
    let now = Date.parse('2025-01-01T00:00:00Z');
    const ctx = { blobs, queues: {}, log: silentLog, now: () => new Date(now) };
    const first = await takeLearnerLease(ctx, 'r-1');
    expect(first.kind).toBe('mine'); // ... and its holder dies before submitting
    now += LEASE_STALE_MS - 1000;
    await expect(takeLearnerLease(ctx, 'r-1')).rejects.toThrow(LeaseHeldError);
    now += 2000;
    const second = await takeLearnerLease(ctx, 'r-1');
    expect(second.kind).toBe('mine');
    if (first.kind === 'mine' && second.kind === 'mine')
      expect(second.lease.holder).not.toBe(first.lease.holder);
  });
});
