// The onnxruntime sampling graph draws exactly what the JS sampler draws (same uniforms -> same tokens, the same
// full-softmax log-probs), for every sampling mode, with and without vocabulary padding to whole blocks.
import { afterAll, describe, expect, it } from 'vitest';
import { samplingStream } from '#shared/policy/rng';
import { DEFAULT_SAMPLING, Sampler, type SamplingParams } from '#shared/policy/sampler';
import { SamplerGraph } from '#shared/policy/sampler-graph';

const graphs: SamplerGraph[] = [];
afterAll(async () => {
  for (const g of graphs) await g.dispose();
});

/** rows x V logits: row 0 flat-ish (N(0, 1)), row 1 peaked (a few tokens far above the rest). */
function logitsRows(V: number): Float32Array {
  const u = samplingStream(99, 0, 0);
  const out = new Float32Array(2 * V);
  for (let i = 0; i < V; i++) {
    out[i] = Math.sqrt(-2 * Math.log(1 - u.next())) * Math.cos(2 * Math.PI * u.next());
    out[V + i] = i % 97 === 3 ? 12 + 3 * u.next() : 2 * u.next();
  }
  return out;
}

const modes: [string, Partial<SamplingParams>][] = [
  ['full distribution', {}],
  ['temperature 0.7', { temperature: 0.7 }],
  ['top-k 40', { topK: 40 }],
  ['top-k 40 + top-p 0.8', { topK: 40, topP: 0.8 }],
  ['top-p 0.9', { topP: 0.9 }],
  ['greedy', { temperature: 0 }],
];

describe.each([1024, 5000])('SamplerGraph, vocabulary %i', (V) => {
  it.each(modes)('%s: same tokens and log-probs as Sampler.draw', async (_, over) => {
    const graph = await SamplerGraph.create(V, 1);
    graphs.push(graph);
    const exact = new Sampler(V);
    const s = { ...DEFAULT_SAMPLING, ...over };
    const logits = logitsRows(V);
    const prepared = await graph.prepare(logits, 2, s);
    for (const r of [0, 1]) {
      const a = samplingStream(7, r, 0);
      const b = samplingStream(7, r, 0);
      for (let i = 0; i < 200; i++) {
        const want = exact.draw(logits.subarray(r * V, (r + 1) * V), s, a);
        const got = graph.draw(prepared, r, s, b, exact);
        expect(got.token).toBe(want.token);
        expect(Math.abs(got.logprob - want.logprob)).toBeLessThan(1e-5);
      }
    }
  });
});
