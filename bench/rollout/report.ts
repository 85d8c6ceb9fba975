// The table bench/rollout prints and writes into BENCHMARKS.md ("Rollout engine").

/** One child run's timings (engine or transformers.js). */
export interface Measurement {
  engine: string;
  G: number;
  P: number;
  N: number;
  loadMs: number;
  totalMs: number;
  prefillTokens: number;
  prefillMs: number;
  decodeSteps: number;
  decodeTokens: number;
  decodeMs: number;
  /** Engine only: time in the sampler (all draws). */
  sampleMs?: number;
}

export interface Row {
  dtype: string;
  G: number;
  /** Weight bytes one decode step reads. */
  weightBytes: number;
  /** Copy bandwidth, bytes moved (read + write) per second. */
  bandwidth: number;
  ours: Measurement;
  ref?: Measurement;
}

const f = (x: number, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
/** Prompt tokens served per second: G samples of a P-token prompt (the engine prefills them once). */
const prefillRate = (m: Measurement) => (m.G * m.P) / (m.prefillMs / 1000);
/** Generated tokens per second after the first: everything but the prefill. */
const decodeRate = (m: Measurement) => m.decodeTokens / ((m.totalMs - m.prefillMs) / 1000);
const endToEnd = (m: Measurement) => (m.G * m.N) / (m.totalMs / 1000);
/** The fastest decode the memory allows: every step reads all weights once, for the whole batch. */
const boundRate = (r: Row) => r.G / (r.weightBytes / r.bandwidth);

export function renderSection(
  rows: Row[],
  ctx: { machine: string; command: string; threads: number; preset: string },
): string {
  const first = rows[0]?.ours;
  const lines = [
    '## Rollout engine',
    '',
    `\`${ctx.command}\` — \`shared/policy\` (onnxruntime-node, ${ctx.threads} threads) at ${ctx.preset}'s dimensions`,
    `with random weights (\`toolrl_learner tiny --preset\`, then \`export\` fp32 / int4), ${first?.P ?? 128}-token prompt,`,
    `${first?.N ?? 256} new tokens per sample, temperature 1 over the full vocabulary, EOS ignored. References in the`,
    'same run: transformers.js `generate()` on the same bundle (the G prompts as one batch: it has no shared',
    'prefill), and the memory-bandwidth bound = weight bytes a decode step reads / copy bandwidth (bytes read +',
    'written per second by the same threads, measured in the run). Each engine runs in its own process after a',
    `warm-up. Machine: ${ctx.machine}.`,
    '',
    '| bundle | G | prefill: prompt tok/s (ms) | decode tok/s | end-to-end tok/s | transformers.js: prefill, decode, end-to-end tok/s | vs transformers.js (end-to-end, decode) | bandwidth bound tok/s | engine / bound |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const o = r.ours;
    const ref = r.ref;
    lines.push(
      `| ${r.dtype} | ${r.G} | ${f(prefillRate(o))} (${f(o.prefillMs, 0)}) | ${f(decodeRate(o), 2)} | ${f(endToEnd(o), 2)} | ` +
        (ref ? `${f(prefillRate(ref))}, ${f(decodeRate(ref), 2)}, ${f(endToEnd(ref), 2)}` : '-') +
        ' | ' +
        (ref ? `${f(endToEnd(o) / endToEnd(ref), 2)}x, ${f(decodeRate(o) / decodeRate(ref), 2)}x` : '-') +
        ` | ${f(boundRate(r), 2)} | ${f((100 * decodeRate(o)) / boundRate(r), 0)}% |`,
    );
  }
  lines.push('', 'Where a decode step goes (engine):', '');
  lines.push(
    '| bundle | G | weights read / step | copy bandwidth | bound ms / step | onnxruntime ms / step | sampling ms / step |',
  );
  lines.push('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const o = r.ours;
    const steps = o.decodeSteps || 1;
    lines.push(
      `| ${r.dtype} | ${r.G} | ${f(r.weightBytes / 1e6, 0)} MB | ${f(r.bandwidth / 1e9, 2)} GB/s | ` +
        `${f((1000 * r.weightBytes) / r.bandwidth, 0)} | ${f(o.decodeMs / steps, 0)} | ${f((o.sampleMs ?? 0) / (steps + 1), 1)} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
