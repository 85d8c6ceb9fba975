// The folder BlobStore: conditional writes are what exactly-once group emission rests on.
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { blobStoreContract } from '../../helpers/blob-store-contract.ts';

const store = () => new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-blob-')));
const text = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);

blobStoreContract('folder', async () => ({ store: store(), prefix: 'runs/r/' }));

describe('FolderBlobStore', () => {
  it('puts, gets, heads and deletes; a missing key is undefined', async () => {
    const s = store();
    expect(await s.get('runs/r/a.json')).toBeUndefined();
    expect(await s.head('runs/r/a.json')).toBeUndefined();
    const { etag } = await s.put('runs/r/a.json', '{"x":1}');
    expect(text(await s.get('runs/r/a.json'))).toBe('{"x":1}');
    const info = await s.head('runs/r/a.json');
    expect(info).toMatchObject({ key: 'runs/r/a.json', etag, size: 7 });
    await s.delete('runs/r/a.json');
    expect(await s.get('runs/r/a.json')).toBeUndefined();
  });

  it('of 20 racing putIfAbsent calls exactly one writes, and its content is the one stored', async () => {
    const s = store();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => s.putIfAbsent('runs/r/groups/g.json', `writer ${i}`)),
    );
    const winners = results.flatMap((r, i) => (r.written ? [i] : []));
    expect(winners).toHaveLength(1);
    expect(text(await s.get('runs/r/groups/g.json'))).toBe(`writer ${winners[0]}`);
    // No temp files are left behind.
    expect(readdirSync(join(s.root, 'runs/r/groups'))).toEqual(['g.json']);
  });

  it('putIfMatch is a compare-and-swap on the etag: of racing updates from one etag exactly one wins', async () => {
    const s = store();
    const { etag } = await s.put('runs/r/run.json', 'v0');
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => s.putIfMatch('runs/r/run.json', `v1 by ${i}`, etag)),
    );
    expect(results.filter((r) => r.written)).toHaveLength(1);
    const stale = await s.putIfMatch('runs/r/run.json', 'v2', etag);
    expect(stale).toEqual({ written: false });
    const missing = await s.putIfMatch('runs/r/none.json', 'x', etag);
    expect(missing).toEqual({ written: false });
  });

  it('every write changes the etag, even with the same content', async () => {
    const s = store();
    const a = await s.put('k', 'same');
    const b = await s.put('k', 'same');
    expect(a.etag).not.toBe(b.etag);
  });

  it('lists by key prefix, including a partial file-name prefix, in key order', async () => {
    const s = store();
    for (const k of [
      'runs/r/groups/val-v1-p0.json',
      'runs/r/groups/val-v1-p1.json',
      'runs/r/groups/e0-p0.json',
    ])
      await s.put(k, '{}');
    await s.put('runs/r/trajectories/e0-p0/0.json', '{}');
    await s.put('runs/r2/x.json', '{}');
    expect((await s.list('runs/r/groups/val-v1-')).map((i) => i.key)).toEqual([
      'runs/r/groups/val-v1-p0.json',
      'runs/r/groups/val-v1-p1.json',
    ]);
    expect((await s.list('runs/r/')).map((i) => i.key)).toEqual([
      'runs/r/groups/e0-p0.json',
      'runs/r/groups/val-v1-p0.json',
      'runs/r/groups/val-v1-p1.json',
      'runs/r/trajectories/e0-p0/0.json',
    ]);
    expect(await s.list('runs/none/')).toEqual([]);
  });

  it('rejects keys that could escape the root', async () => {
    const s = store();
    await expect(s.put('../x', 'a')).rejects.toThrow(/'\.\.' segment/);
    await expect(s.put('/etc/x', 'a')).rejects.toThrow(/relative/);
    await expect(s.get('a//b')).rejects.toThrow(/empty segment/);
  });

  it('tells put listeners about writes, not about failed conditional writes', async () => {
    const s = store();
    const seen: string[] = [];
    s.onPut((key) => seen.push(key));
    await s.put('a', '1');
    await s.putIfAbsent('b', '1');
    await s.putIfAbsent('b', '2');
    expect(seen).toEqual(['a', 'b']);
  });

  it('streams an object', async () => {
    const s = store();
    await s.put('big.bin', Buffer.alloc(100_000, 7));
    const stream = await s.getStream('big.bin');
    let n = 0;
    for await (const chunk of stream!) n += (chunk as Buffer).length;
    expect(n).toBe(100_000);
    expect(await s.getStream('none')).toBeUndefined();
  });

  it('read of a directory key is undefined, as S3 has no such object', async () => {
    const s = store();
    await s.put('runs/r/groups/g.json', 'x');
    expect(await s.read('runs/r/groups')).toBeUndefined();
  });
});
