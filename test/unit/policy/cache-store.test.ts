// The KV cache store kept between a trajectory's turns: bounded by bytes, oldest pushed out first, and its counts
// say how many continuations found their cache (the rest re-prefill, or rebuild pass by pass in deterministic runs).
import { describe, expect, it } from 'vitest';
import { CacheStore } from '#shared/policy/cache-store';
import { KvCache, rowArray } from '#shared/policy/kv-cache';

const shape = { numLayers: 1, numKvHeads: 1, headDim: 2 };
/** A one-row cache of `n` tokens: 2 (keys, values) x n x 2 floats x 4 bytes = 16n bytes. */
const cacheOf = (n: number) => new KvCache(shape, 1, n, [new Float32Array(2 * n)], [new Float32Array(2 * n)]);
const tokens = (n: number, tag: number) => Array.from({ length: n }, (_, i) => tag * 100 + i);

describe('CacheStore', () => {
  it('pushes out the oldest caches past its budget and counts what was found and lost', () => {
    const store = new CacheStore(16 * 10); // room for 10 tokens
    const a = store.put(tokens(4, 1), cacheOf(4));
    const b = store.put(tokens(4, 2), cacheOf(4));
    const c = store.put(tokens(4, 3), cacheOf(4)); // pushes out a
    expect(store.heldBytes).toBe(16 * 8);
    expect(store.take(a, [...tokens(4, 1), 7])).toBeUndefined();
    expect(store.take(b, [...tokens(4, 2), 7])?.length).toBe(4);
    // a continuation whose tokens no longer start with the cached ones does not get it (and it is gone)
    expect(store.take(c, tokens(4, 9))).toBeUndefined();
    expect(store.take(null, [])).toBeUndefined(); // nothing was kept for it: neither found nor lost
    expect(store.put(tokens(11, 4), cacheOf(11))).toBeNull(); // larger than the whole budget
    expect(store.stats).toEqual({ kept: 3, pushedOut: 2, found: 1, lost: 2, freed: 0 });
    expect(store.size).toBe(0);
  });

  it('keeps every cache when the budget holds them all', () => {
    const store = new CacheStore(16 * 100);
    const keys = [1, 2, 3, 4, 5].map((t) => store.put(tokens(8, t), cacheOf(8)));
    keys.forEach((k, i) => {
      expect(store.take(k, tokens(8, i + 1))).toBeDefined();
    });
    expect(store.stats).toEqual({ kept: 5, pushedOut: 0, found: 5, lost: 0, freed: 0 });
  });

  it("frees an ended trajectory's cache at once, so it pushes out no live one", () => {
    const store = new CacheStore(16 * 10); // room for 10 tokens
    const ended = store.put(tokens(4, 1), cacheOf(4));
    const live = store.put(tokens(4, 2), cacheOf(4));
    store.free(ended);
    store.free(live, 'another version'); // only its owner frees an entry
    store.free(null);
    expect(store.heldBytes).toBe(16 * 4);
    const next = store.put(tokens(4, 3), cacheOf(4)); // fits beside the live one: nothing pushed out
    expect(store.take(live, tokens(4, 2))).toBeDefined();
    expect(store.take(next, tokens(4, 3))).toBeDefined();
    expect(store.take(ended, tokens(4, 1))).toBeUndefined();
    expect(store.stats).toEqual({ kept: 3, pushedOut: 0, found: 2, lost: 1, freed: 1 });
  });

  it("gives pooled arrays back when it frees or pushes out a cache, and never a taken one's", () => {
    const floats = 7877; // a size class no other test uses
    const pooled = (n: number) =>
      new KvCache(shape, 1, n, [rowArray(floats, 2 * n)], [rowArray(floats, 2 * n)]);
    const store = new CacheStore(2 ** 20); // pools up to half of it: the four arrays fit
    const ended = pooled(4);
    const taken = pooled(4);
    const e = store.put(tokens(4, 1), ended);
    const t = store.put(tokens(4, 2), taken);
    expect(store.take(t, tokens(4, 2))).toBe(taken);
    store.free(e);
    const handed = [rowArray(floats, 1), rowArray(floats, 1), rowArray(floats, 1)];
    const buffers = (c: KvCache) => [c.keys[0]!.buffer, c.values[0]!.buffer];
    // The freed cache's two arrays come back; the taken one's stay with its taker.
    expect(handed.filter((a) => buffers(ended).includes(a.buffer)).length).toBe(2);
    expect(handed.some((a) => buffers(taken).includes(a.buffer))).toBe(false);
  });
});
