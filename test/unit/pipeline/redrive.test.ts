// Redrive on the queue port (embedded queues, a folder store): which dead letters are a run's (a claim-checked body
// is followed to its run and group; poison that names no run stays), what moves, and which records follow.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { claimJournals, JournalsInUseError, journalOwner } from '#shared/adapters/embedded/journal-owner';
import { createEmbeddedQueues } from '#shared/adapters/embedded/queues';
import { putJson } from '#shared/pipeline/blob-json';
import { encodeMessage } from '#shared/pipeline/claim-check';
import { listDeadLetters } from '#shared/pipeline/dead-letters';
import { describeRedrive, redriveRun } from '#shared/pipeline/redrive';
import { keys } from '#shared/topology';
import { bareRunStatus } from '../../helpers/run-status.ts';

const group = (runId: string, groupId: string) => ({
  runId,
  groupId,
  promptId: 'p0',
  epoch: 0,
  stage: null,
  split: 'train' as const,
  dataSource: 'calc',
  groupSize: 2,
  policyVersion: null,
});

const record = (runId: string, groupId: string, stage: 'rollout' | 'reward', messageId: string) => ({
  schemaVersion: 1,
  runId,
  groupId,
  split: 'train',
  stage,
  sampleIndex: stage === 'reward' ? 0 : null,
  messageId,
  reason: 'Error: boom (after 5 attempts)',
  receiveCount: 5,
  deadLetteredAt: '2025-01-01T00:00:00.000Z',
});

describe('redriveRun', () => {
  it("moves the run's dead letters (claim checks followed) and their records, leaving poison and other stages", async () => {
    // GIVEN a reward dead letter too big for a queue body (a claim check), a rollout dead letter, poison, and
    // records for both groups
    const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-redrive-')));
    const q = createEmbeddedQueues();
    await putJson(blobs, keys.runJson('r-1'), bareRunStatus('r-1'));
    const big = {
      trajectory: { group: group('r-1', 'e0-p1'), sampleIndex: 0 },
      padding: 'x'.repeat(300_000),
    };
    const claimed = await encodeMessage(blobs, 'r-1', big);
    expect(JSON.parse(claimed)).toHaveProperty('claimCheck');
    q.dlqs.reward.sendSync(claimed);
    q.dlqs.reward.sendSync('{not json');
    q.dlqs.rollout.sendSync(JSON.stringify({ group: group('r-1', 'e0-p2') }));
    await putJson(
      blobs,
      keys.deadLetter('r-1', 'e0-p1', 'reward', 'm-1'),
      record('r-1', 'e0-p1', 'reward', 'm-1'),
    );
    await putJson(
      blobs,
      keys.deadLetter('r-1', 'e0-p2', 'rollout', 'm-2'),
      record('r-1', 'e0-p2', 'rollout', 'm-2'),
    );

    // WHEN only the reward stage is redriven
    const r = await redriveRun(blobs, q, 'r-1', { stages: ['reward'], waitTimeSec: 0 });

    // THEN the claim-checked message is back on the reward queue as it was, its record moved; the poison and the
    // rollout dead letter stay, and so does the rollout record
    expect(r).toEqual({ runId: 'r-1', moved: { reward: 1 }, recordsRedriven: 1, recordsWithoutMessage: 0 });
    expect(describeRedrive(r)).toBe('run r-1: sent back reward 1; 1 dead-letter record moved to redriven/');
    expect(q.queues.reward.browse().map((m) => m.body)).toEqual([claimed]);
    expect(q.dlqs.reward.browse().map((m) => m.body)).toEqual(['{not json']);
    expect(q.dlqs.rollout.size).toBe(1);
    expect((await listDeadLetters(blobs, 'r-1')).map((d) => d.groupId)).toEqual(['e0-p2']);
    expect(await blobs.listKeys(keys.redriven('r-1'))).toEqual([
      keys.redrivenRecord('r-1', 'e0-p1', 'reward', 'm-1'),
    ]);
    await q.close();
  });

  it('a record whose message is gone from the queue stays a drop, and says so', async () => {
    const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-redrive-')));
    const q = createEmbeddedQueues();
    await putJson(blobs, keys.runJson('r-1'), bareRunStatus('r-1'));
    await putJson(
      blobs,
      keys.deadLetter('r-1', 'e0-p1', 'reward', 'm-1'),
      record('r-1', 'e0-p1', 'reward', 'm-1'),
    );
    const r = await redriveRun(blobs, q, 'r-1', { waitTimeSec: 0 });
    expect(r).toEqual({ runId: 'r-1', moved: { reward: 0 }, recordsRedriven: 0, recordsWithoutMessage: 1 });
    expect(describeRedrive(r)).toBe(
      'run r-1: no dead-lettered messages to send back; 0 dead-letter records moved to redriven/; 1 left as drops (no message of their group was in the dead-letter queue)',
    );
    expect(await listDeadLetters(blobs, 'r-1')).toHaveLength(1);
    await q.close();
  });
});

describe('queue journal owner', () => {
  it('a dead owner is taken over; a live one (another process on this host) is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolrl-owner-'));
    // a pid no process has (beyond pid_max)
    writeFileSync(
      join(dir, 'owner.json'),
      JSON.stringify({ pid: 4_194_305, host: hostname(), since: 'then' }),
    );
    expect(journalOwner(dir)).toBeUndefined();
    claimJournals(dir);
    expect(journalOwner(dir)).toBeUndefined(); // this process's own claim
    writeFileSync(join(dir, 'owner.json'), JSON.stringify({ pid: 1, host: hostname(), since: 'then' }));
    expect(journalOwner(dir)).toMatchObject({ pid: 1 });
    expect(() => claimJournals(dir)).toThrow(JournalsInUseError);
  });
});
