// The slots decoder's wider session (SpareCores, shared/policy/slot-decoder.ts): while the spare cores are free a
// pass runs on a second session with more threads, and its result is the narrow session's bit for bit, so a
// deterministic run samples the same tokens whichever session ran each pass. Checked on the real tiny bundle in fp32
// and int8 (MatMulNBits) against a decoder that has only the narrow session, over prefills and multi-row decode
// steps, with the cores free and busy by turns; and a wider session that computes other bits is never used.
import { join } from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { readBundle } from '#shared/policy/bundle';
import { SLOTS_GRAPH_FILE, SlotDecoder, type SlotForward, type SlotView } from '#shared/policy/slot-decoder';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';

/** A pass: rows of new tokens on a cache of random keys and values, each row at its own length. */
interface Pass {
  tokens: number[][];
  lengths: number[];
  past: SlotView;
  lastOnly: boolean;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function makePass(
  kv: { numLayers: number; numKvHeads: number; headDim: number },
  vocab: number,
  rows: number,
  seq: number,
  seed: number,
): Pass {
  const r = rng(seed);
  const capacity = 64;
  const size = rows * kv.numKvHeads * capacity * kv.headDim;
  const fill = () => Float32Array.from({ length: size }, () => r() * 2 - 1);
  const keys = Array.from({ length: kv.numLayers }, fill);
  const values = Array.from({ length: kv.numLayers }, fill);
  return {
    tokens: Array.from({ length: rows }, () => Array.from({ length: seq }, () => Math.floor(r() * vocab))),
    lengths: Array.from({ length: rows }, (_, b) => (seq > 1 ? b * 3 : 20 + ((b * 7) % 40))),
    past: { batch: rows, capacity, keys, values },
    lastOnly: seq === 1,
  };
}

const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
function expectSameBits(a: SlotForward, b: SlotForward): void {
  expect(bytes(a.logits).equals(bytes(b.logits))).toBe(true);
  for (let i = 0; i < a.newKeys.length; i++) {
    expect(bytes(a.newKeys[i]!).equals(bytes(b.newKeys[i]!))).toBe(true);
    expect(bytes(a.newValues[i]!).equals(bytes(b.newValues[i]!))).toBe(true);
  }
}

async function decoders(quantization: 'none' | 'int8', onWide?: (s: InferenceSession) => void) {
  const { bundleDir } = await tinyBundle({ quantization });
  const m = (await readBundle(bundleDir)).manifest;
  const kv = { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim };
  const path = join(bundleDir, SLOTS_GRAPH_FILE);
  const narrow = await SlotDecoder.load(path, kv, m.vocabSize, { threads: 1 });
  const state = { free: false, wide: 0, narrow: 0, differed: 0 };
  const mixed = await SlotDecoder.load(path, kv, m.vocabSize, {
    threads: 1,
    spare: {
      threads: 2,
      free: () => state.free,
      ran: (wide) => {
        if (wide) state.wide++;
        else state.narrow++;
      },
      differed: () => state.differed++,
    },
  });
  if (onWide) {
    // The wider session is the next one built: wrap it.
    const ort = await import('onnxruntime-node');
    const create = ort.InferenceSession.create.bind(ort.InferenceSession) as (
      path: string,
      opts: InferenceSession.SessionOptions,
    ) => Promise<InferenceSession>;
    const spy = vi.spyOn(ort.InferenceSession, 'create').mockImplementation((async (
      p: string,
      o: InferenceSession.SessionOptions,
    ) => {
      const s = await create(p, o);
      onWide(s);
      return s;
    }) as typeof ort.InferenceSession.create);
    expect(await mixed.prepareSpare()).toBe(true);
    spy.mockRestore();
  }
  expect(await mixed.prepareSpare()).toBe(true); // built (just now, or above through the wrapper)
  return { kv, vocab: m.vocabSize, narrow, mixed, state };
}

afterEach(() => vi.restoreAllMocks());

describe('slots decoder on spare cores', () => {
  for (const quantization of ['none', 'int8'] as const) {
    it(`computes the same bits on 2 threads as on 1, free or busy by turns (${quantization})`, async () => {
      const { kv, vocab, narrow, mixed, state } = await decoders(quantization);
      try {
        // A 48-token prefill, 24-row decode steps, a 3-row continuation of 5 tokens; free on every other pass.
        const shapes: [number, number][] = [
          [1, 48],
          [24, 1],
          [3, 5],
          [24, 1],
          [1, 48],
          [24, 1],
          [16, 1],
          [3, 5],
        ];
        for (const [k, [rows, seq]] of shapes.entries()) {
          state.free = k % 2 === 0 || k >= 4;
          const p = makePass(kv, vocab, rows, seq, 100 + k);
          const a = await narrow.forward(p.tokens, p.lengths, p.past, p.lastOnly);
          const b = await mixed.forward(p.tokens, p.lengths, p.past, p.lastOnly);
          expectSameBits(a, b);
        }
        expect(state.differed).toBe(0);
        // The first free pass (48 token rows) ran on both and settled the check; the free passes after it ran on
        // the wider session alone, the busy ones on the narrow one.
        expect(state).toMatchObject({ wide: 5, narrow: 3 });
      } finally {
        await Promise.all([narrow.dispose(), mixed.dispose()]);
      }
    });
  }

  it('never uses a wider session whose first pass differs from the narrow one', async () => {
    const { kv, vocab, narrow, mixed, state } = await decoders('none', (s) => {
      const run = s.run.bind(s) as (f: InferenceSession.FeedsType) => Promise<InferenceSession.ReturnType>;
      Object.assign(s, {
        run: async (feeds: InferenceSession.FeedsType) => {
          const out = await run(feeds);
          (out.logits!.data as Float32Array)[0]! += 1e-3; // a last-bits difference in one logit
          return out;
        },
      });
    });
    try {
      state.free = true;
      for (const [k, [rows, seq]] of (
        [
          [1, 48],
          [24, 1],
          [3, 5],
        ] as const
      ).entries()) {
        const p = makePass(kv, vocab, rows, seq, 200 + k);
        expectSameBits(
          await narrow.forward(p.tokens, p.lengths, p.past, p.lastOnly),
          await mixed.forward(p.tokens, p.lengths, p.past, p.lastOnly),
        );
      }
      expect(state).toMatchObject({ differed: 1, wide: 0, narrow: 3 });
    } finally {
      await Promise.all([narrow.dispose(), mixed.dispose()]);
    }
  });
});
