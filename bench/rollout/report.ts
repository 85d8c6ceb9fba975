// The tables bench/rollout prints and writes into BENCHMARKS.md ("Rollout engine", between the markers below):
// every figure is the median over the rounds with the range (min-max) in brackets; ratios are taken per round
// (the engine against transformers.js or llama.cpp of the same round, the bound from that round's copy
// bandwidth), then summarised.
import { type Agreement, agreementTable } from './agreement.ts';
import type { Measurement } from './child.ts';

export const BEGIN = '<!-- bench/rollout: generated, begin -->';
export const END = '<!-- bench/rollout: generated, end -->';
/** The markers of a block: the default one, or a real model's own (`tag` = its name). */
const markers = (tag?: string) =>
  tag
    ? {
        begin: `<!-- bench/rollout ${tag}: generated, begin -->`,
        end: `<!-- bench/rollout ${tag}: generated, end -->`,
      }
    : { begin: BEGIN, end: END };

/** One round: a copy-bandwidth measurement, then the engine and the references back to back (rotating order). */
export interface Round {
  /** Copy bandwidth, bytes moved (read + write) per second, measured at the start of the round. */
  bandwidth: number;
  ours: Measurement;
  /** transformers.js on the same bundle. */
  ref?: Measurement | undefined;
  /** llama.cpp on a GGUF of the same weights. */
  llama?: Measurement | undefined;
}

export interface Row {
  dtype: string;
  G: number;
  /** Weight bytes one decode step reads. */
  weightBytes: number;
  /** Bytes of KV cache per token per row (2 x layers x kv heads x head dim x 4). */
  cacheBytesPerToken: number;
  rounds: Round[];
  /** The GGUF type llama.cpp ran against this bundle (q4_0, q8_0, f32), when it ran. */
  gguf?: string;
}

export interface Context {
  command: string;
  machine: string;
  threads: number;
  /** What was measured, e.g. "qwen2.5-0.5b's dimensions, random weights". */
  model: string;
  warmupTokens: number;
  /** The llama.cpp reference's versions, when it ran. */
  llamaCpp?: string;
  /** llama.cpp's sampler top-k (0 or absent: the full vocabulary, as the engine samples). */
  llamaTopK?: number;
  /** The graph the engine decoded with (absent: slots). */
  graph?: 'slots' | 'standard';
  /** A real model's name: its block has its own markers. */
  tag?: string;
  /** The top-5 agreement check against llama.cpp (real models). */
  agreements?: Agreement[];
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
export const median = (xs: number[]) => {
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const f = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
/** "median (min-max)", or the one value of a single round. */
export function cell(xs: number[], digits = 1, unit = ''): string {
  if (xs.length === 0) return '-';
  const s = sorted(xs);
  const m = `${f(median(xs), digits)}${unit}`;
  return s.length === 1 ? m : `${m} (${f(s[0]!, digits)}-${f(s.at(-1)!, digits)})`;
}

/** Prompt tokens served per second: G samples of a P-token prompt (the engine prefills them once). */
export const prefillRate = (m: Measurement) => (m.G * m.P) / (m.prefillMs / 1000);
/** Generated tokens per second after the first: everything but the prefill. */
export const decodeRate = (m: Measurement) => m.decodeTokens / ((m.totalMs - m.prefillMs) / 1000);
export const endToEnd = (m: Measurement) => (m.G * m.N) / (m.totalMs / 1000);
/** The fastest decode the memory allows: every step reads all weights once, for the whole batch. */
const boundRate = (r: Row, x: Round) => r.G / (r.weightBytes / x.bandwidth);

function perRound(r: Row, pick: (x: Round) => number | undefined): number[] {
  return r.rounds.map(pick).filter((v): v is number => v !== undefined);
}

export function renderTables(rows: Row[], ctx: Context): string {
  const first = rows[0]?.rounds[0]?.ours;
  const loads = rows.flatMap((r) =>
    r.rounds.flatMap((x) => [x.ours.loadAvg, x.ref?.loadAvg ?? x.ours.loadAvg]),
  );
  const rounds = rows[0]?.rounds.length ?? 0;
  const { begin, end } = markers(ctx.tag);
  const lines = [
    begin,
    `\`${ctx.command}\` — ${ctx.model}, ${first?.P ?? '?'}-token prompt, ` +
      `${first?.N ?? '?'} new tokens per sample, ${ctx.threads} intra-op threads, ${rounds} rounds, ` +
      `warm-up ${ctx.warmupTokens} tokens on the measured shape. ${ctx.machine}; 1-minute load average ` +
      `${cell(loads, 1)} over the runs. Median (min-max) over the rounds.`,
    '',
    '| bundle | G | engine prefill tok/s | engine decode tok/s | engine end-to-end tok/s | transformers.js prefill tok/s | transformers.js decode tok/s | transformers.js end-to-end tok/s |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const ours = (g: (m: Measurement) => number, d: number) =>
      cell(
        perRound(r, (x) => g(x.ours)),
        d,
      );
    const ref = (g: (m: Measurement) => number, d: number) =>
      cell(
        perRound(r, (x) => (x.ref ? g(x.ref) : undefined)),
        d,
      );
    lines.push(
      `| ${r.dtype} | ${r.G} | ${ours(prefillRate, 0)} | ${ours(decodeRate, 1)} | ${ours(endToEnd, 1)} | ` +
        `${ref(prefillRate, 0)} | ${ref(decodeRate, 1)} | ${ref(endToEnd, 1)} |`,
    );
  }
  lines.push(
    '',
    '| bundle | G | vs transformers.js, end-to-end | vs transformers.js, decode | copy bandwidth GB/s | weights read / step | bound tok/s | engine decode / bound |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const r of rows) {
    const vs = (g: (m: Measurement) => number) =>
      cell(
        perRound(r, (x) => (x.ref ? g(x.ours) / g(x.ref) : undefined)),
        2,
        'x',
      );
    const bandwidth = cell(
      perRound(r, (x) => x.bandwidth / 1e9),
      2,
    );
    const bound = cell(perRound(r, (x) => boundRate(r, x)));
    const share = cell(
      perRound(r, (x) => (100 * decodeRate(x.ours)) / boundRate(r, x)),
      0,
      '%',
    );
    lines.push(
      `| ${r.dtype} | ${r.G} | ${vs(endToEnd)} | ${vs(decodeRate)} | ${bandwidth} | ` +
        `${f(r.weightBytes / 1e6, 0)} MB | ${bound} | ${share} |`,
    );
  }
  lines.push(
    '',
    ...((ctx.graph ?? 'slots') === 'slots'
      ? [
          'One engine decode step: onnxruntime = the forward pass as the engine sees it (`decodeMs`: the slots graph,',
          'which reads the cache in place and returns only the new keys and values, onnxruntime-node wrapping the',
          'inputs and copying the outputs, and the engine writing the new keys and values into its cache); sampling =',
          'the sampling graph and the draws; bound = weight bytes / copy bandwidth; KV cache = the mean over the steps',
          'of the cache a step reads (in place: nothing of it is copied).',
        ]
      : [
          'One engine decode step: onnxruntime = the forward pass as the engine sees it (`decodeMs`: the standard',
          'graph, its K/V `Concat`, and onnxruntime-node wrapping the inputs and copying every output into new JS',
          'buffers); sampling = the sampling graph and the draws; bound = weight bytes / copy bandwidth; KV cache = the',
          'mean over the steps of the cache a step feeds in, which the graph copies into `present` and',
          'onnxruntime-node copies again.',
        ]),
    '',
    '| bundle | G | onnxruntime ms / step | sampling ms / step | bound ms / step | KV cache MB |',
    '|---|---|---|---|---|---|',
  );
  for (const r of rows) {
    const step = perRound(r, (x) => x.ours.decodeMs / x.ours.decodeSteps);
    const sampling = perRound(r, (x) => (x.ours.sampleMs ?? 0) / (x.ours.decodeSteps + 1));
    const bound = perRound(r, (x) => (1000 * r.weightBytes) / x.bandwidth);
    const m = r.rounds[0]!.ours;
    const meanCache = r.cacheBytesPerToken * m.G * (m.P + m.N / 2);
    lines.push(
      `| ${r.dtype} | ${r.G} | ${cell(step)} | ${cell(sampling)} | ${cell(bound)} | ${f(meanCache / 1e6, 1)} |`,
    );
  }
  if (rows.some((r) => r.rounds.some((x) => x.llama))) lines.push('', ...llamaTable(rows, ctx));
  if (ctx.agreements?.length) lines.push('', ...agreementTable(ctx.agreements));
  lines.push(end);
  return `${lines.join('\n')}\n`;
}

/** The engine against llama.cpp on the same weights (GGUF), ratios within each round. */
function llamaTable(rows: Row[], ctx: Context): string[] {
  const builds = [
    ...new Set(rows.flatMap((r) => r.rounds.flatMap((x) => (x.llama ? [x.llama.engine] : [])))),
  ];
  const k = ctx.llamaTopK ?? 0;
  const sampling =
    k === 0
      ? 'the same sampling (temperature 1, full vocabulary)'
      : k === 1
        ? 'greedy sampling (top-k 1: next to no sampling cost, while the engine samples at temperature 1 over the full vocabulary)'
        : `top-k ${k} sampling at temperature 1 (the engine samples over the full vocabulary)`;
  const lines = [
    `llama.cpp: ${ctx.llamaCpp ?? 'node-llama-cpp'}; CPU backend ${builds.join(', ')}; the G sequences of one ` +
      `context decoded as one batch (each prefills its own copy of the prompt: no shared prefill), ${sampling} ` +
      'and EOS fed back like any token.',
    '',
    '| bundle | G | llama.cpp GGUF | llama.cpp prefill tok/s | llama.cpp decode tok/s | llama.cpp end-to-end tok/s | engine vs llama.cpp, decode | engine vs llama.cpp, end-to-end | engine vs llama.cpp, CPU time per token | peak memory MB, engine / llama.cpp |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    if (!r.rounds.some((x) => x.llama)) continue;
    const ll = (g: (m: Measurement) => number, d: number) =>
      cell(
        perRound(r, (x) => (x.llama ? g(x.llama) : undefined)),
        d,
      );
    const vs = (g: (m: Measurement) => number) =>
      cell(
        perRound(r, (x) => (x.llama ? g(x.ours) / g(x.llama) : undefined)),
        2,
        'x',
      );
    // CPU time: llama.cpp's per sampled token over the engine's (> 1: the engine does less work per token).
    const cpu = cell(
      perRound(r, (x) => (x.llama?.cpuMs && x.ours.cpuMs ? x.llama.cpuMs / x.ours.cpuMs : undefined)),
      2,
      'x',
    );
    const peak = (side: (x: Round) => Measurement | undefined) =>
      f(Math.max(...perRound(r, (x) => side(x)?.maxRssMb)), 0);
    lines.push(
      `| ${r.dtype} | ${r.G} | ${(r.gguf ?? '?').toUpperCase()} | ${ll(prefillRate, 0)} | ${ll(decodeRate, 1)} | ` +
        `${ll(endToEnd, 1)} | ${vs(decodeRate)} | ${vs(endToEnd)} | ${cpu} | ` +
        `${peak((x) => x.ours)} / ${peak((x) => x.llama)} |`,
    );
  }
  return lines;
}

/**
 * `text` with the generated block of the "Rollout engine" section replaced (the section's prose is kept). A real
 * model's block (`tag`) has its own markers; the first time, it goes at the end of the section under its own heading.
 */
export function replaceTables(text: string, tables: string, tag?: string): string {
  const { begin: BEGIN, end: END } = markers(tag);
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start >= 0 && end > start)
    return `${text.slice(0, start)}${tables.trimEnd()}${text.slice(end + END.length)}`;
  const heading = text.indexOf('\n## Rollout engine\n');
  if (tag && heading >= 0) {
    const next = text.indexOf('\n## ', heading + 1);
    const at = next < 0 ? text.length : next;
    const block = `\n### ${tag} against llama.cpp (generated)\n\n${tables.trimEnd()}\n`;
    return `${text.slice(0, at).trimEnd()}\n${block}${text.slice(at)}`;
  }
  if (heading < 0) return `${text.trimEnd()}\n\n## Rollout engine\n\n${tables}`;
  const next = text.indexOf('\n## ', heading + 1);
  const head = text.slice(0, heading + '\n## Rollout engine\n'.length);
  return `${head}\n${tables}${next < 0 ? '' : text.slice(next)}`;
}
