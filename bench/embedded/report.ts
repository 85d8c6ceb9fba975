// The tables bench/embedded prints, and their place in BENCHMARKS.md ("Embedded run: where the time goes"):
// one block per label between `<!-- bench/embedded: LABEL, begin -->` and its end marker.
import type { CpuWindow } from './procstat.ts';

interface Span {
  readonly s: number;
  readonly calls: number;
}

export interface Breakdown {
  readonly config: string;
  readonly cpu: string;
  /** 1-minute load averages sampled over the run, ascending. */
  readonly load: number[];
  readonly steps: number;
  readonly rlWallS: number;
  readonly totalWallS: number;
  readonly trajectories: number;
  readonly tokens: number;
  readonly responseLengthMean: number;
  readonly stepTimeMean: number;
  /** Seconds by learner phase, summed over the step rows. */
  readonly learner: Record<string, number>;
  readonly node: {
    readonly functions: Record<string, Span>;
    readonly sampling: Span;
    readonly acquire: Span;
    readonly blobs: Span;
    readonly queues: Span;
    /** Union of every function's invocations. */
    readonly busy: number;
  };
  readonly cpuWindow: CpuWindow;
  readonly threads: { readonly ort: string; readonly torch: number };
}

const LEARNER_PHASES: [string, string][] = [
  ['wait', 'waiting for scored groups (idle)'],
  ['receive', 'receiving groups (stdin line, manifest read, sha256, checks)'],
  ['pack', 'batch tensors and packed micro-batches'],
  ['old_logprobs', 'old / reference log-probs (no grad)'],
  ['forward', 'forward + loss'],
  ['backward', 'backward'],
  ['optimizer', 'grad clip + AdamW'],
  ['step_rest', 'rest of the step (advantages, metrics)'],
  ['publish', 'publish (export, hashing, writes, LATEST)'],
  ['checkpoint', 'checkpoint'],
  ['metrics', 'metrics line, TensorBoard, reward plot'],
  ['state', 'state.json'],
  ['other', 'unaccounted'],
];

const f1 = (x: number) => x.toFixed(1);
const pct = (x: number, of: number) => `${((100 * x) / Math.max(1e-9, of)).toFixed(0)}%`;

export function renderReport(b: Breakdown, label: string): string {
  const w = b.rlWallS;
  const lines: string[] = [];
  const loadRange = `${b.load[0]?.toFixed(1)}-${b.load[b.load.length - 1]?.toFixed(1)}`;
  lines.push(
    `\`npx tsx bench/embedded/index.ts --config ${b.config}\` (${label}): ${b.cpu}, 1-minute load average ${loadRange} during the run. ` +
      `RL stage ${f1(w)} s for ${b.steps} learner steps (${(w / Math.max(1, b.steps)).toFixed(2)} s a step; ` +
      `learner step compute ${b.stepTimeMean.toFixed(2)} s), ${b.trajectories} trained completions ` +
      `(${(b.trajectories / w).toFixed(1)} a second), ${(b.tokens / Math.max(1, b.steps)).toFixed(0)} tokens a step, ` +
      `${b.responseLengthMean.toFixed(0)} response tokens per completion; whole command ${f1(b.totalWallS)} s.`,
  );
  lines.push('');
  lines.push('| learner (Python) phase | s | share of the RL stage |');
  lines.push('|---|---|---|');
  const known = new Set(LEARNER_PHASES.map(([k]) => k));
  for (const [k, name] of LEARNER_PHASES)
    if (b.learner[k] !== undefined)
      lines.push(`| ${name} | ${f1(b.learner[k]!)} | ${pct(b.learner[k]!, w)} |`);
  for (const [k, v] of Object.entries(b.learner))
    if (!known.has(k)) lines.push(`| ${k} | ${f1(v)} | ${pct(v, w)} |`);
  lines.push('');
  lines.push(
    '| Node (pipeline) work, wall-clock while any was under way | s | share of the RL stage | calls |',
  );
  lines.push('|---|---|---|---|');
  for (const [fn, s] of Object.entries(b.node.functions).sort((x, y) => y[1].s - x[1].s))
    lines.push(`| ${fn} function invocations | ${f1(s.s)} | ${pct(s.s, w)} | ${s.calls} |`);
  const n = b.node;
  lines.push(
    `| - in them: sampling (policy engine calls) | ${f1(n.sampling.s)} | ${pct(n.sampling.s, w)} | ${n.sampling.calls} |`,
  );
  lines.push(
    `| - in them: policy acquire (reloads a new version) | ${f1(n.acquire.s)} | ${pct(n.acquire.s, w)} | ${n.acquire.calls} |`,
  );
  lines.push(
    `| - blob store calls (folder; JSON bodies) | ${f1(n.blobs.s)} | ${pct(n.blobs.s, w)} | ${n.blobs.calls} |`,
  );
  lines.push(
    `| - queue calls (in-memory + journal writes) | ${f1(n.queues.s)} | ${pct(n.queues.s, w)} | ${n.queues.calls} |`,
  );
  lines.push(`| any function busy | ${f1(n.busy)} | ${pct(n.busy, w)} | |`);
  lines.push(`| no function busy (idle) | ${f1(w - n.busy)} | ${pct(w - n.busy, w)} | |`);
  lines.push('');
  const c = b.cpuWindow;
  lines.push('| process | CPU s | cores busy (CPU s / wall) | threads (max) | CPU s by thread |');
  lines.push('|---|---|---|---|---|');
  let total = 0;
  for (const p of c.processes) {
    total += p.cpuS;
    const by = Object.entries(p.byThread)
      .filter(([, s]) => s >= 0.05)
      .sort((x, y) => y[1] - x[1])
      .map(([k, s]) => `${k} ${f1(s)}`)
      .join(', ');
    lines.push(`| ${p.name} | ${f1(p.cpuS)} | ${(p.cpuS / c.wallS).toFixed(2)} | ${p.maxThreads} | ${by} |`);
  }
  lines.push(`| both | ${f1(total)} | ${(total / c.wallS).toFixed(2)} of ${b.cpu.split(', ').pop()} | | |`);
  lines.push('');
  lines.push(
    `Threads: onnxruntime decoder ${b.threads.ort} intra-op (+1 for the sampling graph), torch ${b.threads.torch}; ` +
      `runnable threads of the two processes ${c.meanRunnable.toFixed(2)} on average, more than the cores in ` +
      `${pct(c.oversubscribed, 1)} of ${c.samples} samples (every 50 ms).`,
  );
  return lines.join('\n');
}

const begin = (label: string) => `<!-- bench/embedded: ${label}, begin -->`;
const end = (label: string) => `<!-- bench/embedded: ${label}, end -->`;

/** BENCHMARKS.md with the label's block replaced (or appended to the "Embedded run" section, else the file). */
export function replaceSection(text: string, label: string, body: string): string {
  const block = `${begin(label)}\n${body}\n${end(label)}`;
  const a = text.indexOf(begin(label));
  const z = text.indexOf(end(label));
  if (a >= 0 && z > a) return `${text.slice(0, a)}${block}${text.slice(z + end(label).length)}`;
  return `${text.trimEnd()}\n\n${block}\n`;
}
