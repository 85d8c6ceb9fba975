import { describe, expect, it } from 'vitest';
import { boundRowPool, KvCache, recycleRow, rowArray } from '#shared/policy/kv-cache';

// One layer, 2 KV heads, head dim 1: value = 100 * row + 10 * head + column, so every float names its place.
const shape = { numLayers: 1, numKvHeads: 2, headDim: 1 };
function cache(batch: number, length: number, offset = 0): KvCache {
  const data = new Float32Array(batch * 2 * length);
  for (let b = 0; b < batch; b++)
    for (let h = 0; h < 2; h++)
      for (let c = 0; c < length; c++) data[(b * 2 + h) * length + c] = 100 * b + 10 * h + c + offset;
  return new KvCache(shape, batch, length, [data], [data.map((x) => -x)]);
}

describe('KvCache', () => {
  it('gathers rows, repeats allowed (tiling a prefilled prompt)', () => {
    const g = cache(2, 3).gather([1, 1, 0]);
    expect([...g.keys[0]!]).toEqual([
      100, 101, 102, 110, 111, 112, 100, 101, 102, 110, 111, 112, 0, 1, 2, 10, 11, 12,
    ]);
    expect(g.batch).toBe(3);
    expect(g.bytes).toBe(2 * 3 * 2 * 3 * 4);
    expect(() => cache(2, 3).gather([2])).toThrow(/row 2 of a batch of 2/);
  });

  it('pads one-row caches on the left into one batch', () => {
    const p = KvCache.padLeft([cache(1, 1), cache(1, 3, 5)], 3);
    // row 0: [_, _, 0] per head; row 1: [5, 6, 7] / [15, 16, 17]
    expect([...p.keys[0]!]).toEqual([0, 0, 0, 0, 0, 10, 5, 6, 7, 15, 16, 17]);
    expect([...p.values[0]!]).toEqual([0, 0, -0, 0, 0, -10, -5, -6, -7, -15, -16, -17]);
  });

  it('compacts a padded row back to its real columns', () => {
    const c = cache(2, 4).compactRow(1, [0, 1, 0, 1]);
    expect(c.length).toBe(2);
    expect([...c.keys[0]!]).toEqual([101, 103, 111, 113]);
    expect(() => cache(1, 4).compactRow(0, [1])).toThrow(/1 flags for 4 columns/);
  });
});

describe('the row pool (rowArray, recycleRow)', () => {
  it('pools nothing until a cache budget bounds it, then up to half of the largest budget', () => {
    const one = { numLayers: 1, numKvHeads: 1, headDim: 1 };
    const floats = 7933; // 31,732 bytes; a size class no other test uses
    const a = rowArray(floats, 1);
    recycleRow(new KvCache(one, 1, 1, [a], [a]));
    expect(rowArray(floats, 1).buffer).not.toBe(a.buffer); // no budget yet: left to the collector
    boundRowPool(2 * 4 * floats); // room for one array
    boundRowPool(1000); // a smaller budget elsewhere does not shrink it
    const [b, c] = [rowArray(floats, 1), rowArray(floats, 1)];
    recycleRow(new KvCache(one, 1, 1, [b], [c]));
    const next = [rowArray(floats, 1), rowArray(floats, 1)];
    expect(next.filter((x) => x.buffer === b.buffer || x.buffer === c.buffer).length).toBe(1);
  });

  it('hands a given-back array out again, once, as a view of the size asked for', () => {
    boundRowPool(2 ** 20);
    const one = { numLayers: 1, numKvHeads: 1, headDim: 1 };
    const floats = 7919; // a size class no other test uses
    const a = rowArray(floats, 5);
    expect(a.length).toBe(5);
    expect(a.buffer.byteLength).toBe(4 * floats);
    a.set([1, 2, 3, 4, 5]);
    const cache = new KvCache(one, 1, 5, [a], [rowArray(floats, 5)]);
    recycleRow(cache);
    recycleRow(cache); // given back twice: still pooled once
    const again = [rowArray(floats, 3), rowArray(floats, 3), rowArray(floats, 3)];
    const reused = again.filter((x) => x.buffer === a.buffer || x.buffer === cache.values[0]!.buffer);
    expect(reused.length).toBe(2); // the two given back, each once; the third is new
    expect(new Set(again.map((x) => x.buffer)).size).toBe(3);
    expect(again.every((x) => x.length === 3)).toBe(true);
  });

  it('leaves arrays it did not hand out to the collector', () => {
    boundRowPool(2 ** 20);
    const one = { numLayers: 1, numKvHeads: 1, headDim: 1 };
    const own = new Float32Array(7907);
    recycleRow(new KvCache(one, 1, 7907, [own], [own]));
    expect(rowArray(7907, 1).buffer).not.toBe(own.buffer);
  });
});
