// What bench/embedded/borrow.ts reads back from each run folder and the block it prints: the RL stage's start (the
// learner's `ready` line in pipeline.log), how many rollout decoder passes ran on all cores, the learner's time
// waiting for groups, and the validation summaries, which the two runs of a pair must share.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type EvalSummary, readEvalSummaries, readStepRows } from '../run-folder.ts';

export interface DecoderPasses {
  readonly halfCores: number;
  readonly allCores: number;
  readonly differed: boolean;
}

export interface BorrowRun {
  /** Epoch ms of the learner's `ready` line: model loaded, warm start done, v0 published. */
  readonly readyAt: number;
  /** Absent when no pass ran (pipeline.log has no `rollout decoder passes` line). */
  readonly passes: DecoderPasses | null;
  /** Seconds the learner waited for scored groups, over its steps (`timing_s/wait`). */
  readonly learnerWaitS: number;
  readonly steps: number;
  readonly evals: readonly EvalSummary[];
}

export function readBorrowRun(runDir: string): BorrowRun {
  const lines = readFileSync(join(runDir, 'pipeline.log'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { time: string; message: string } & Record<string, unknown>);
  const ready = lines.find((l) => l.message === 'learner ready');
  if (!ready) throw new Error(`${join(runDir, 'pipeline.log')}: no 'learner ready' line`);
  const p = lines.findLast((l) => l.message === 'rollout decoder passes');
  const rows = readStepRows(runDir);
  return {
    readyAt: Date.parse(ready.time),
    passes: p
      ? { halfCores: Number(p.halfCores), allCores: Number(p.allCores), differed: p.differed === true }
      : null,
    learnerWaitS: rows.reduce((s, r) => s + (r['timing_s/wait'] ?? 0), 0),
    steps: rows.length,
    evals: readEvalSummaries(runDir),
  };
}

/**
 * Null when the two runs validated alike (the same versions with the same accuracy, reward and tool calls: what the
 * same sampled tokens give), else the first difference, in words.
 */
export function learningDiffers(a: BorrowRun, b: BorrowRun): string | null {
  if (a.steps !== b.steps) return `${a.steps} learner steps against ${b.steps}`;
  const va = a.evals.map((e) => e.policyVersion).join(',');
  const vb = b.evals.map((e) => e.policyVersion).join(',');
  if (va !== vb) return `validated versions ${va} against ${vb}`;
  for (const [i, x] of a.evals.entries()) {
    const y = b.evals[i]!;
    for (const k of ['accuracy', 'rewardMean', 'toolCallsPerTrajectory'] as const)
      if (x[k] !== y[k]) return `v${x.policyVersion} ${k} ${x[k]} against ${y[k]}`;
  }
  return null;
}

export const geometricMean = (xs: readonly number[]): number =>
  Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);

export interface TimedRun extends BorrowRun {
  /** Wall-clock of the whole command, s. */
  readonly totalS: number;
  /** From the learner's `ready` line to the command's exit, s. */
  readonly rlS: number;
}

export interface BorrowPair {
  /** As shipped: the decoder borrows all cores while the learner waits. */
  readonly lending: TimedRun;
  /** `--threads H`: the decoder keeps its own H threads. */
  readonly fixed: TimedRun;
  readonly lendingFirst: boolean;
}

const s1 = (x: number) => x.toFixed(1);
const evalsLine = (r: BorrowRun) =>
  r.evals.map((e) => `v${e.policyVersion} ${(100 * e.accuracy).toFixed(1)}%`).join(' -> ');

/** The Markdown block: one row per run, the per-pair ratios and their geometric mean. */
export function renderBorrowReport(opts: {
  command: string;
  threads: number;
  cpu: string;
  load: readonly number[];
  pairs: readonly BorrowPair[];
}): string {
  const { pairs } = opts;
  const rl = pairs.map((p) => p.fixed.rlS / p.lending.rlS);
  const total = pairs.map((p) => p.fixed.totalS / p.lending.totalS);
  const differs = pairs.map((p) => learningDiffers(p.lending, p.fixed));
  const lines = [
    `\`${opts.command}\`: ${opts.cpu}, 1-minute load average ${s1(opts.load[0] ?? 0)}-${s1(opts.load.at(-1) ?? 0)} ` +
      `over the runs, ${pairs.length} pair(s), the order alternating.`,
    '',
    '| pair | decoder threads | whole command s | RL stage s | learner waiting s | passes on all cores | validation |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const [i, p] of pairs.entries()) {
    const row = (r: TimedRun, label: string) => {
      const passes = r.passes
        ? `${r.passes.allCores} of ${r.passes.allCores + r.passes.halfCores}${r.passes.differed ? ' (differed: off)' : ''}`
        : '-';
      return `| ${i + 1} | ${label} | ${s1(r.totalS)} | ${s1(r.rlS)} | ${s1(r.learnerWaitS)} | ${passes} | ${evalsLine(r)} |`;
    };
    const order = p.lendingFirst
      ? [
          row(p.lending, `${opts.threads}, all while the learner waits`),
          row(p.fixed, `${opts.threads} (--threads)`),
        ]
      : [
          row(p.fixed, `${opts.threads} (--threads)`),
          row(p.lending, `${opts.threads}, all while the learner waits`),
        ];
    lines.push(...order);
  }
  lines.push(
    '',
    `RL stage, fixed / lending: ${rl.map((x) => x.toFixed(3)).join(', ')} (geometric mean **${geometricMean(rl).toFixed(3)}**); ` +
      `whole command: ${total.map((x) => x.toFixed(3)).join(', ')} (geometric mean ${geometricMean(total).toFixed(3)}).`,
    differs.every((d) => d === null)
      ? 'Each pair validated alike (the same accuracy, reward and tool calls at every version).'
      : `Validation differed: ${differs.map((d, i) => `pair ${i + 1}: ${d ?? 'alike'}`).join('; ')}.`,
  );
  return lines.join('\n');
}
