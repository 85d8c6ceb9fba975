// Continuous batching over the slots graph (shared/policy/batcher.ts, slot-batch.ts) on the real tiny bundle:
// requests in flight together share decode steps, and each samples exactly what it samples alone, bit for bit,
// whoever shares its batch; rows join and leave at any step; the cache bookkeeping is checked float by float.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SlotBatcher } from '#shared/policy/batcher';
import { CacheStore } from '#shared/policy/cache-store';
import { KvCache, type KvShape } from '#shared/policy/kv-cache';
import { loadPolicy, type Policy } from '#shared/policy/policy';
import { DEFAULT_SAMPLING, type SamplingParams } from '#shared/policy/sampler';
import { SLOT_CHUNK, SlotBatch, slotCapacity } from '#shared/policy/slot-batch';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';

const s = (over: Partial<SamplingParams> = {}): SamplingParams => ({
  ...DEFAULT_SAMPLING,
  maxNewTokens: 14,
  ...over,
});
const tools: ToolSchema[] = [
  {
    type: 'function',
    function: { name: 'calculator', description: 'arithmetic', parameters: { type: 'object' } },
  },
];
const ask = (q: string): ChatMessage[] => [{ role: 'user', content: q }];

let policy: Policy;
let bundleDir: string;
beforeAll(async () => {
  ({ bundleDir } = await tinyBundle());
  policy = await loadPolicy(bundleDir, { threads: 1 });
});
afterAll(async () => policy?.dispose());

describe('SlotBatch', () => {
  // One layer, 2 KV heads, head dim 1: value = 100 * row + 10 * head + column.
  const shape = { numLayers: 1, numKvHeads: 2, headDim: 1 };
  const row = (length: number, tag: number): KvCache => {
    const data = new Float32Array(2 * length);
    for (let h = 0; h < 2; h++)
      for (let c = 0; c < length; c++) data[h * length + c] = 100 * tag + 10 * h + c;
    return new KvCache(shape, 1, length, [data], [data.map((x) => -x)]);
  };

  it('keeps each row at its own length, appends in place, and gives rows back exactly', () => {
    const b = new SlotBatch(shape);
    expect(b.add(row(3, 1))).toBe(0);
    expect(b.add(row(1, 2))).toBe(1);
    expect(b.capacity).toBe(SLOT_CHUNK);
    expect(b.lengths).toEqual([3, 1]);
    // Each row's new key: [2 rows, 2 heads, 1, 1].
    b.append([Float32Array.of(1003, 1013, 2001, 2011)], [Float32Array.of(-1003, -1013, -2001, -2011)]);
    expect(b.lengths).toEqual([4, 2]);
    expect([...b.extract(0).keys[0]!]).toEqual([100, 101, 102, 1003, 110, 111, 112, 1013]);
    expect([...b.extract(1).values[0]!]).toEqual([-200, -2001, -210, -2011]);
  });

  it("adds a prefilled row from its past and the pass's new keys as add does from the joined cache", () => {
    const joined = new SlotBatch(shape);
    const direct = new SlotBatch(shape);
    joined.add(row(2, 1));
    direct.add(row(2, 1));
    // The pass's new keys and values for 3 fed tokens: [1 row, 2 heads, 3, 1].
    const newKeys = [Float32Array.of(5, 6, 7, 15, 16, 17)];
    const newValues = [newKeys[0]!.map((x) => -x)];
    // The joined cache a prefill's caller used to build: the past's 64 columns, then the 3 new ones, per head.
    const past = row(SLOT_CHUNK, 3);
    const T = SLOT_CHUNK + 3;
    const keys = new Float32Array(2 * T);
    for (let h = 0; h < 2; h++)
      for (let c = 0; c < T; c++)
        keys[h * T + c] =
          c < SLOT_CHUNK ? past.keys[0]![h * SLOT_CHUNK + c]! : newKeys[0]![h * 3 + c - SLOT_CHUNK]!;
    const full = new KvCache(shape, 1, T, [keys], [keys.map((x) => -x)]);
    expect(joined.add(full)).toBe(1);
    expect(direct.addJoined(past, newKeys, newValues, 3)).toBe(1);
    expect(direct.lengths).toEqual(joined.lengths);
    expect(direct.capacity).toBe(joined.capacity);
    for (const b of [0, 1]) {
      expect([...direct.extract(b).keys[0]!]).toEqual([...joined.extract(b).keys[0]!]);
      expect([...direct.extract(b).values[0]!]).toEqual([...joined.extract(b).values[0]!]);
    }
    expect([...direct.extract(1).keys[0]!.subarray(SLOT_CHUNK - 1, SLOT_CHUNK + 3)]).toEqual([
      300 + SLOT_CHUNK - 1,
      5,
      6,
      7,
    ]);
  });

  it('moves the last row into a removed one and grows its capacity by whole chunks', () => {
    const b = new SlotBatch(shape);
    b.add(row(2, 1));
    b.add(row(5, 2));
    b.add(row(SLOT_CHUNK, 3)); // needs one more slot for the next token: two chunks
    expect(b.capacity).toBe(2 * SLOT_CHUNK);
    expect(b.remove(0)).toBe(2);
    expect(b.lengths).toEqual([SLOT_CHUNK, 5]);
    expect(b.extract(0).keys[0]![SLOT_CHUNK - 1]).toBe(300 + SLOT_CHUNK - 1);
    expect([...b.extract(1).keys[0]!]).toEqual([200, 201, 202, 203, 204, 210, 211, 212, 213, 214]);
    expect(b.remove(1)).toBe(-1);
    expect(b.remove(0)).toBe(-1);
    expect(b.batch).toBe(0);
    expect(slotCapacity(0)).toBe(SLOT_CHUNK);
    expect(slotCapacity(SLOT_CHUNK + 1)).toBe(2 * SLOT_CHUNK);
  });
});

describe('continuous batching', () => {
  it('samples each request exactly as alone, bit for bit, whatever shares its decode steps', async () => {
    const a = policy.renderPrompt(ask('What is 17 * 23?'), tools);
    const b = policy.renderPrompt(ask('What is 3 plus 4, and then 9 times 11?'), tools);
    const c = policy.renderPrompt(ask('Hi'), []);
    const alone = {
      a: await policy.sampleGroup(a, 4, s({ seed: 11 })),
      b: await policy.sampleGroup(b, 3, s({ seed: 12, maxNewTokens: 30 })),
      c: await policy.sampleGroup(c, 5, s({ seed: 13, temperature: 0.7 })),
    };
    const stepsBefore = policy.metrics.decodeSteps;
    // All three in flight at once (rows of different lengths, budgets and temperatures in one batch), twice in
    // different orders so different rows sit side by side.
    for (const order of [
      ['a', 'b', 'c'],
      ['c', 'a', 'b'],
    ] as const) {
      const run = {
        a: () => policy.sampleGroup(a, 4, s({ seed: 11 })),
        b: () => policy.sampleGroup(b, 3, s({ seed: 12, maxNewTokens: 30 })),
        c: () => policy.sampleGroup(c, 5, s({ seed: 13, temperature: 0.7 })),
      };
      const got = await Promise.all(order.map((k) => run[k]()));
      order.forEach((k, i) => {
        expect(got[i]).toEqual(alone[k]);
      });
    }
    // They did share steps: the longest request alone takes as many steps as the two concurrent runs each.
    const together = policy.metrics.decodeSteps - stepsBefore;
    const longest = Math.max(...Object.values(alone).flatMap((g) => g.map((x) => x.tokenIds.length)));
    expect(together).toBeLessThanOrEqual(2 * longest);
  });

  it('continues trajectories joined mid-flight exactly as one by one', async () => {
    const prompt = policy.renderPrompt(ask('What is 17 * 23?'), tools);
    const { states } = await policy.startGroup(ask('What is 17 * 23?'), tools, 4, s({ seed: 31 }));
    expect(prompt.length).toBeGreaterThan(0);
    const results = [{ role: 'tool' as const, content: '391' }];
    // Cache-free continuations (the cache keys are dropped), one at a time, then all at once beside a group start.
    const cold = states.map((st) => ({ ...st, cacheKey: null }));
    const one: unknown[] = [];
    for (const st of cold) one.push(await policy.continueTrajectory(st, results, s({ seed: 31 })));
    const [together] = await Promise.all([
      policy.continueTrajectories(
        cold.map((st) => ({ state: st, messages: results })),
        s({ seed: 31 }),
      ),
      policy.sampleGroup(policy.renderPrompt(ask('Hi'), []), 3, s({ seed: 2 })),
    ]);
    // Equal but for the cache keys (fresh ids of the caches each kept).
    const plain = (r: unknown) => {
      const { state, sample } = r as { state: { cacheKey: unknown }; sample: unknown };
      return { state: { ...state, cacheKey: typeof state.cacheKey }, sample };
    };
    expect(together.every((r) => r.ok)).toBe(true);
    expect(together.map(plain)).toEqual(one.map(plain));
  });

  it('fails only the request whose input is bad, and keeps serving the others', async () => {
    const prompt = policy.renderPrompt(ask('Hi'), []);
    const bad = policy.sampleGroup([prompt[0]!, 10 ** 9], 2, s({ seed: 1 })); // a token id past the vocabulary
    const good = policy.sampleGroup(prompt, 2, s({ seed: 1 }));
    await expect(bad).rejects.toThrow();
    expect((await good).every((x) => x.tokenIds.length > 0)).toBe(true);
  });

  it('settles one call of several continuations only when every one has, a bad one among them too', async () => {
    // The caller gives the pasts it passed back to the row pool once the call settles (policy.ts), so no item may
    // still wait for admission when another's failure is thrown.
    const { decoding, kv } = policy as unknown as { decoding: SlotBatcher; kv: KvShape };
    const prompt = policy.renderPrompt(ask('Hi'), []);
    const finished: number[] = [];
    const item = (feed: number[], i: number) => ({
      past: KvCache.empty(kv, 1),
      feed,
      row: { sampleIndex: i, turn: 0, budget: 4 },
    });
    const call = decoding.decodeEach({
      items: [item([prompt[0]!, 10 ** 9], 0), item(prompt, 1), item(prompt, 2)], // the first: a token id past the vocabulary
      params: s({ seed: 1 }),
      retain: (k) => finished.push(k),
    });
    await expect(call).rejects.toThrow();
    expect(finished.sort()).toEqual([1, 2]);
  });
});

describe('kept caches', () => {
  it('a version loaded again between turns continues on the caches its earlier instance kept, exactly', async () => {
    const caches = new CacheStore(2 ** 30);
    const results = [{ role: 'tool' as const, content: '391' }];
    const first = await loadPolicy(bundleDir, { threads: 1, caches, version: 3 });
    const { states } = await first.startGroup(ask('What is 17 * 23?'), tools, 2, s({ seed: 41 }));
    // The same states continued by the instance that sampled them, and by a fresh one of the same version.
    const again = await first.continueTrajectories(
      states.map((st) => ({ state: st, messages: results })),
      s({ seed: 41 }),
    );
    expect(first.metrics.cacheHits).toBe(2);
    const { states: states2 } = await first.startGroup(ask('What is 17 * 23?'), tools, 2, s({ seed: 41 }));
    await first.dispose();
    const reloaded = await loadPolicy(bundleDir, { threads: 1, caches, version: 3 });
    const other = await loadPolicy(bundleDir, { threads: 1, caches, version: 4 });
    try {
      // Another version's weights never continue on these caches: it re-prefills, and leaves them in the store.
      await other.continueTrajectories([{ state: states2[0]!, messages: results }], s({ seed: 41 }));
      expect(other.metrics.cacheMisses).toBe(1);
      const later = await reloaded.continueTrajectories(
        states2.map((st) => ({ state: st, messages: results })),
        s({ seed: 41 }),
      );
      expect(reloaded.metrics.cacheHits).toBe(2);
      const sample = (r: (typeof later)[number]) => (r.ok ? r.sample : r.error);
      expect(later.map(sample)).toEqual(again.map(sample));
    } finally {
      await reloaded.dispose();
      await other.dispose();
    }
  });
});
