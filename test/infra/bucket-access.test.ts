// The stages' bucket grants (STAGE_BUCKET_ACCESS, IAM patterns made from the key templates) against what their
// shared code really reads and writes: a folder store records every key touched while a stage dead-letters a
// validation group's message (record, validation summary, run completion) and while run-starter takes the
// learner lease; each key must fall under one of the stage's grants, as IAM matches them.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { putJson } from '#shared/pipeline/blob-json';
import { recordDeadLetter } from '#shared/pipeline/dead-letters';
import { recordLearnerJob, takeLearnerLease } from '#shared/pipeline/learner-lease';
import { QueueTally } from '#shared/pipeline/queue-tally';
import { readRunStatus } from '#shared/pipeline/run-status';
import type { BlobStore } from '#shared/ports/blob-store';
import { silentLog } from '#shared/ports/log';
import type { StageContext } from '#shared/ports/stage-context';
import { keys } from '#shared/topology';
import { STAGE_BUCKET_ACCESS } from '../../infra/lib/constructs/stage-functions.ts';
import { iamMatch } from '../helpers/iam.ts';
import { bareRunStatus } from '../helpers/run-status.ts';

const READS = new Set(['get', 'read', 'getStream', 'head']);
const WRITES = new Set(['put', 'putIfAbsent', 'putIfMatch']);

/** A folder store that notes the key of every object read or written (listing is granted bucket-wide) and
 * refuses deletes (no stage is granted one). */
function recordingStore(): { blobs: BlobStore; reads: Set<string>; writes: Set<string> } {
  const inner = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-grants-')));
  const reads = new Set<string>();
  const writes = new Set<string>();
  const blobs = new Proxy(inner, {
    get(target, name, receiver) {
      const v = Reflect.get(target, name, receiver);
      if (typeof v !== 'function') return v;
      return (key: string, ...rest: unknown[]) => {
        if (READS.has(String(name))) reads.add(key);
        if (WRITES.has(String(name))) writes.add(key);
        if (name === 'delete') throw new Error(`no stage may delete (${key})`);
        return v.call(target, key, ...rest);
      };
    },
  }) as BlobStore;
  return { blobs, reads, writes };
}

const context = (blobs: BlobStore): StageContext => ({
  blobs,
  queues: {},
  log: silentLog,
  now: () => new Date('2025-01-02T00:00:00.000Z'),
});

function expectGranted(stage: keyof typeof STAGE_BUCKET_ACCESS, reads: Set<string>, writes: Set<string>) {
  const { read = [], write = [] } = STAGE_BUCKET_ACCESS[stage];
  for (const key of writes)
    expect(
      write.some((p) => iamMatch(p, key)),
      `${stage} writes ${key}`,
    ).toBe(true);
  for (const key of reads)
    expect(
      read.some((p) => iamMatch(p, key)),
      `${stage} reads ${key}`,
    ).toBe(true);
}

describe('stage bucket grants', () => {
  it.each(['rollout', 'tool-call', 'reward'] as const)(
    'let %s record a dead letter, write the validation summary it completes and complete the run',
    async (stage) => {
      // GIVEN a running run with one validation prompt and a learner that is done
      const { blobs, reads, writes } = recordingStore();
      await putJson(blobs, keys.runJson('r-1'), {
        ...bareRunStatus('r-1'),
        totals: { groupsPlanned: 4, trainPrompts: 4, valPrompts: 1, epochs: 1 },
      });
      await putJson(blobs, keys.learnerState('r-1'), {
        step: 4,
        policyVersion: 2,
        groupsConsumed: 4,
        groupsDropped: 0,
        rewardMean: 0.5,
        done: true,
        updatedAt: '2025-01-01T00:00:00.000Z',
      });
      reads.clear();
      writes.clear();
      const group = {
        runId: 'r-1',
        groupId: 'val-v2-p0',
        promptId: 'val-p0',
        epoch: 0,
        stage: null,
        split: 'val' as const,
        dataSource: 'calc',
        groupSize: 2,
        policyVersion: 2,
      };

      // WHEN the stage dead-letters the validation group's only message
      await recordDeadLetter(context(blobs), {
        stage,
        of: { group, sampleIndex: stage === 'rollout' ? null : 0 },
        messageId: 'm-1',
        reason: 'Error: boom',
        receiveCount: 5,
      });

      // THEN the record, the version's summary and the completed run were written, each under a grant
      expect((await readRunStatus(blobs, 'r-1'))?.status).toBe('completed');
      expect([...writes].sort()).toEqual(
        [
          keys.deadLetter('r-1', 'val-v2-p0', stage, 'm-1'),
          keys.evalSummary('r-1', 2),
          keys.runJson('r-1'),
        ].sort(),
      );
      expectGranted(stage, reads, writes);
    },
  );

  it.each(['run-starter', 'feeder', 'rollout', 'tool-call', 'reward'] as const)(
    "let %s write its count of a run's messages (the queue tally)",
    async (stage) => {
      const { blobs, reads, writes } = recordingStore();
      const tally = new QueueTally(blobs, { intervalMs: 0, log: silentLog });
      tally.handled('r-1', 'rollout');
      await tally.settle();
      expect([...writes]).toEqual([keys.queueTally('r-1', tally.writer)]);
      expectGranted(stage, reads, writes);
    },
  );

  it('let run-starter take the learner lease and record its job', async () => {
    const { blobs, reads, writes } = recordingStore();
    const ctx = context(blobs);
    const lease = await takeLearnerLease(ctx, 'r-1');
    if (lease.kind !== 'mine') throw new Error('expected to take the lease');
    await recordLearnerJob(ctx, lease, 'job-1');
    expect([...writes]).toEqual([keys.learnerLease('r-1')]);
    expectGranted('run-starter', reads, writes);
  });
});
