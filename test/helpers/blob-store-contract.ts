// The BlobStore port's contract, run against every adapter: the folder store in the unit suite and S3 on
// LocalStack in the e2e suite. What the pipeline's exactly-once rests on is here: conditional writes and the
// etag that read() hands back for a later putIfMatch.
import { describe, expect, it } from 'vitest';
import type { BlobStore } from '#shared/ports/blob-store';

const text = (b: Uint8Array | undefined) => (b ? Buffer.from(b).toString('utf8') : undefined);

/** `make` gives a store whose keys start empty (a fresh folder, or a fresh key prefix in a bucket). */
export function blobStoreContract(name: string, make: () => Promise<{ store: BlobStore; prefix: string }>) {
  describe(`BlobStore contract: ${name}`, () => {
    it('read gives the bytes with the etag of those bytes, and undefined for a missing key', async () => {
      const { store: s, prefix } = await make();
      expect(await s.read(`${prefix}missing.json`)).toBeUndefined();
      const { etag } = await s.put(`${prefix}a.json`, '{"x":1}');
      const r = await s.read(`${prefix}a.json`);
      expect(text(r?.body)).toBe('{"x":1}');
      expect(r?.etag).toBe(etag);
      expect(r?.etag).toBe((await s.head(`${prefix}a.json`))?.etag);
    });

    it("read's etag serves a compare-and-swap: it wins once, and a stale etag loses after a write", async () => {
      const { store: s, prefix } = await make();
      const key = `${prefix}run.json`;
      await s.put(key, 'v0');
      const first = await s.read(key);
      const won = await s.putIfMatch(key, 'v1', first!.etag);
      expect(won.written).toBe(true);
      expect((await s.putIfMatch(key, 'v1 again', first!.etag)).written).toBe(false);
      const second = await s.read(key);
      expect(text(second?.body)).toBe('v1');
      expect(won.written && second?.etag).toBe(won.written ? won.etag : undefined);
    });

    it('putIfAbsent writes once; the loser changes nothing', async () => {
      const { store: s, prefix } = await make();
      const key = `${prefix}groups/g.json`;
      expect((await s.putIfAbsent(key, 'first')).written).toBe(true);
      expect(await s.putIfAbsent(key, 'second')).toEqual({ written: false });
      expect(text(await s.get(key))).toBe('first');
    });

    it('lists keys by prefix in key order', async () => {
      const { store: s, prefix } = await make();
      for (const k of ['t/g1/1.json', 't/g1/0.json', 't/g2/0.json']) await s.put(`${prefix}${k}`, k);
      expect(await s.listKeys(`${prefix}t/g1/`)).toEqual([`${prefix}t/g1/0.json`, `${prefix}t/g1/1.json`]);
      expect((await s.list(`${prefix}t/`)).map((i) => i.key)).toEqual([
        `${prefix}t/g1/0.json`,
        `${prefix}t/g1/1.json`,
        `${prefix}t/g2/0.json`,
      ]);
    });
  });
}
