// The reward stage's put of a scored trajectory: a record whose group has another put under way in the same process
// leaves the look at the group to that sibling's record, so a group's records in one batch list it once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { storeScored } from '#shared/pipeline/stages/reward';
import { silentLog } from '#shared/ports/log';
import type { GroupRef } from '#shared/schemas/messages/group-ref';
import { keys } from '#shared/topology';

const group = {
  runId: 'r',
  groupId: 'e0-p0',
  promptId: 'p0',
  epoch: 0,
  stage: null,
  split: 'train',
  dataSource: 'd',
  groupSize: 3,
  policyVersion: null,
} as unknown as GroupRef;

describe('storeScored', () => {
  it('only the last of a group’s concurrent puts is told to look at the group', async () => {
    // GIVEN a store whose puts the test finishes one by one
    const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-reward-store-')));
    const gates: (() => void)[] = [];
    const put = blobs.putIfAbsent.bind(blobs);
    blobs.putIfAbsent = async (...args) => {
      await new Promise<void>((r) => gates.push(r));
      return put(...args);
    };
    const ctx = { blobs, queues: {}, log: silentLog, now: () => new Date(0) };
    // WHEN three samples of the group are stored at once, and their puts end in turn
    const stores = [0, 1, 2].map((i) =>
      storeScored(ctx, group, keys.trajectory('r', 'e0-p0', i), JSON.stringify({ i })),
    );
    const answers: boolean[] = [];
    for (const [i, s] of stores.entries()) {
      while (gates.length <= i) await new Promise((r) => setTimeout(r, 0));
      gates[i]!();
      answers.push((await s).siblingPending);
    }
    // THEN the first two leave the look to a sibling whose put was still under way; the last looks
    expect(answers).toEqual([true, true, false]);
    expect(await blobs.listKeys(keys.trajectoryPrefix('r', 'e0-p0'))).toHaveLength(3);
    // AND a put alone (nothing else under way) looks
    blobs.putIfAbsent = put;
    const alone = await storeScored(ctx, group, keys.trajectory('r', 'e0-p0', 0), '{}');
    expect(alone.siblingPending).toBe(false);
  });

  it('a sibling whose put fails does not leave the others unlooked: the last put that ends looks', async () => {
    const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-reward-store-')));
    const gates: ((fail: boolean) => void)[] = [];
    const put = blobs.putIfAbsent.bind(blobs);
    blobs.putIfAbsent = async (...args) => {
      const fail = await new Promise<boolean>((r) => gates.push(r));
      if (fail) throw new Error('connection reset');
      return put(...args);
    };
    const ctx = { blobs, queues: {}, log: silentLog, now: () => new Date(0) };
    const a = storeScored(ctx, group, keys.trajectory('r', 'e0-p0', 0), '{}');
    const b = storeScored(ctx, group, keys.trajectory('r', 'e0-p0', 1), '{}');
    while (gates.length < 2) await new Promise((r) => setTimeout(r, 0));
    gates[0]!(true); // a's put fails: its record is retried, and its retry looks
    await expect(a).rejects.toThrow('connection reset');
    gates[1]!(false);
    expect((await b).siblingPending).toBe(false);
  });
});
