// `npx tsx bench/rollout/sampler.ts [--rows 8] [--vocab 151936]`: one decode step's sampling (rows of logits ->
// one token each) through the onnxruntime sampling graph against the plain-JS sampler, same process, same draws.
import { parseArgs } from 'node:util';
import { samplingStream } from '#shared/policy/rng';
import { DEFAULT_SAMPLING, Sampler, type SamplingParams } from '#shared/policy/sampler';
import { SamplerGraph } from '#shared/policy/sampler-graph';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '8' },
    vocab: { type: 'string', default: '151936' },
    threads: { type: 'string', default: '2' },
    repeats: { type: 'string', default: '30' },
  },
});
const B = Number(values.rows);
const V = Number(values.vocab);
const u = samplingStream(1, 0, 0);
// Logits shaped like a language model's: a long tail far below a few plausible tokens.
const logits = Float32Array.from({ length: B * V }, (_, i) => (i % 997 === 5 ? 10 : 0) + 4 * u.next() - 2);
const js = new Sampler(V);
const graph = await SamplerGraph.create(V, Number(values.threads));
const modes: [string, Partial<SamplingParams>][] = [
  ['temperature 1, full vocabulary', {}],
  ['top-k 50', { topK: 50 }],
  ['top-p 0.95', { topP: 0.95 }],
];
process.stdout.write(
  `| sampling (${B} rows x ${V}) | plain JS ms / step | onnxruntime graph ms / step | ratio |\n|---|---|---|---|\n`,
);
for (const [name, over] of modes) {
  const s = { ...DEFAULT_SAMPLING, ...over };
  const rng = samplingStream(2, 0, 0);
  const timeJs = async () => {
    for (let r = 0; r < B; r++) js.draw(logits.subarray(r * V, (r + 1) * V), s, rng);
  };
  const timeGraph = async () => {
    const p = await graph.prepare(logits, B, s);
    for (let r = 0; r < B; r++) graph.draw(p, r, s, rng, js);
  };
  const median = async (f: () => Promise<void>) => {
    const ts: number[] = [];
    for (let i = 0; i < Number(values.repeats); i++) {
      const t0 = performance.now();
      await f();
      ts.push(performance.now() - t0);
    }
    return ts.sort((a, b) => a - b)[ts.length >> 1]!;
  };
  await timeJs();
  await timeGraph();
  // Interleaved rounds so load changes hit both alike.
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < 3; round++) {
    a.push(await median(timeJs));
    b.push(await median(timeGraph));
  }
  const mj = a.sort((x, y) => x - y)[1]!;
  const mg = b.sort((x, y) => x - y)[1]!;
  process.stdout.write(`| ${name} | ${mj.toFixed(2)} | ${mg.toFixed(2)} | ${(mj / mg).toFixed(1)}x |\n`);
}
await graph.dispose();
