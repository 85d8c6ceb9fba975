// bench/peer-trl's results: reading the TRL side's timeline, and the Markdown table BENCHMARKS.md ("Peer: TRL")
// holds, with the command, the machine's load and the versions beside it.
import { readFileSync } from 'node:fs';
import type { RunConfig } from '#shared/schemas/config/run';

export interface ValidationPoint {
  step: number;
  accuracy: number | null;
  reward: number | null;
  toolCalls: number | null;
  /** Seconds from the start of the RL stage to the end of this validation. */
  atS?: number;
}

export interface SideResult {
  /** The whole child process: toolrl's command (warm start included); TRL's script (load, v0 validation too). */
  commandS: number;
  /** The RL stage, every validation included: from v0 being ready to the last validation's end. */
  rlS: number;
  steps: number;
  /** Mean seconds of one learner step: toolrl's step_time_s; TRL's training loop less its validations. */
  stepS: number;
  sampled: number;
  trained: number;
  /** Mean tokens the model sampled per episode (tool responses excluded). */
  responseTokens: number;
  validation: ValidationPoint[];
  rewardFirst: number | undefined;
  rewardLast: number | undefined;
  /** TRL only: seconds spent waiting on the bridge (toolrl's calculator and reward, and the pipe to them). */
  bridgeS?: number;
  /** TRL only: what its run measured about itself (precision of its forwards, trainable parameters). */
  notes?: string[];
}

export interface PeerResult {
  command: string;
  /** BENCHMARKS.md block --write fills (index.ts blockKey); absent in older results: the quick start's. */
  block?: string;
  /** toolrl's mode: deterministic, or asynchronous (trainer.deterministic=false). */
  mode?: string;
  date: string;
  cores: number;
  cpu: string;
  load: number;
  loadAfter: number;
  steps: number;
  toolrl: SideResult;
  trl: SideResult;
  versions: Record<string, string>;
  differences: string[];
  /** sha256 of the warm start both sides begin from (the adapter's or the model's safetensors); absent in older results. */
  warmStartSha256?: string;
  /** Where TRL's side came from when it was not trained in this invocation (--trl-result). */
  trlFrom?: { date: string; command: string };
}

/** A command line with what does not change TRL's side taken out: toolrl's mode and where either side was read from. */
function trlSetup(command: string): string {
  return command
    .replace(/ --set trainer\.deterministic=\S+/g, '')
    .replace(/ --toolrl-run DIR/g, '')
    .replace(/ --trl-result FILE/g, '');
}

/**
 * TRL's side of an earlier result (--trl-result), for a run whose TRL would be the same: TRL samples on-policy and
 * knows nothing of toolrl's mode (trainer.deterministic), and the SFT warm start it continues from does not depend on
 * the mode either. Refuses a result whose config, seed, steps, overrides or TRL micro-batch differ, or whose warm
 * start (when the result recorded it) is not this run's.
 */
export function reuseTrlSide(prev: PeerResult, command: string, warmStartSha256: string): PeerResult['trl'] {
  if (trlSetup(prev.command) !== trlSetup(command))
    throw new Error(
      `--trl-result: that result's TRL was run as \`${prev.command}\`, which differs from this run (\`${command}\`) in more than toolrl's mode`,
    );
  if (prev.warmStartSha256 !== undefined && prev.warmStartSha256 !== warmStartSha256)
    throw new Error(
      `--trl-result: that result's TRL started from warm start ${prev.warmStartSha256.slice(0, 12)}, this run's is ${warmStartSha256.slice(0, 12)}`,
    );
  return prev.trl;
}

interface TrlTimeline {
  steps: { step: number; t: number }[];
  evals: {
    step: number;
    start: number;
    end: number;
    accuracy: number | null;
    reward: number | null;
    toolCalls: number | null;
  }[];
  logs: Record<string, number>[];
  trainStart: number;
  trainEnd: number;
  bridgeSeconds: number;
  precision?: { bf16: boolean; cpuBf16Unit: string | null; autocast: { noGrad: string[]; grad: string[] } };
  trainableParameters?: number;
  threads?: number;
}

/** The TRL run's own record of its precision and trainable parameters, as lines for the table's notes. */
export function trlNotes(tl: Pick<TrlTimeline, 'precision' | 'trainableParameters' | 'threads'>): string[] {
  const out: string[] = [];
  const p = tl.precision;
  if (p) {
    const where = (kinds: string[]) => (kinds.length ? kinds.join(' and ') : 'none seen');
    out.push(
      `TRL's precision, measured in its run (GRPOConfig bf16=${p.bf16}; CPU bf16 unit: ${p.cpuBf16Unit ?? 'none'}): forwards without gradients (generation) in ${where(p.autocast.noGrad)}, training forwards in ${where(p.autocast.grad)}`,
    );
  }
  if (tl.trainableParameters !== undefined)
    out.push(
      `TRL trains ${tl.trainableParameters.toLocaleString('en-US')} parameters${tl.threads ? ` with ${tl.threads} torch threads` : ''}`,
    );
  return out;
}

export function readTrlResult(path: string, startMs: number, endMs: number, config: RunConfig): SideResult {
  const tl = JSON.parse(readFileSync(path, 'utf8')) as TrlTimeline;
  const v0 = tl.evals[0];
  const last = tl.evals.at(-1);
  if (!v0 || !last || v0 === last) throw new Error(`${path}: fewer than two validations`);
  const inTrain = tl.evals
    .filter((e) => e.start >= tl.trainStart && e.end <= tl.trainEnd)
    .reduce((a, e) => a + (e.end - e.start), 0);
  const steps = tl.steps.length;
  const stepLogs = tl.logs.filter((l) => typeof l['reward'] === 'number' && !('eval_reward' in l));
  const perStep = config.trainer.batch_prompts * config.rollout.n;
  const lengths = stepLogs.map((l) => l['completions/mean_length'] ?? Number.NaN);
  return {
    commandS: (endMs - startMs) / 1000,
    rlS: last.end - v0.start,
    steps,
    stepS: (tl.trainEnd - tl.trainStart - inTrain) / steps,
    sampled: steps * perStep,
    trained: steps * perStep,
    responseTokens: lengths.reduce((a, b) => a + b, 0) / lengths.length,
    validation: tl.evals.map((e) => ({
      step: e.step,
      accuracy: e.accuracy,
      reward: e.reward,
      toolCalls: e.toolCalls,
      atS: e.end - v0.start,
    })),
    rewardFirst: stepLogs[0]?.['reward'],
    rewardLast: stepLogs.at(-1)?.['reward'],
    bridgeS: tl.bridgeSeconds,
    notes: trlNotes(tl),
  };
}

/**
 * Seconds from the start of the RL stage to the end of the first validation whose reward reached `target` (the
 * issue's measure: wall-clock to TRL's final validation reward), or undefined when no validation reached it. Only
 * validations are seen, so this is an upper bound: the policy may have got there between two of them.
 */
export function secondsToReward(side: SideResult, target: number): number | undefined {
  return side.validation.find((v) => v.reward !== null && v.reward >= target)?.atS;
}

const f = (x: number | null | undefined, d = 2) =>
  x === null || x === undefined || Number.isNaN(x) ? '-' : x.toFixed(d);
const pct = (x: number | null | undefined) =>
  x === null || x === undefined ? '-' : `${(100 * x).toFixed(1)}%`;
const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}x` : '-');

export function renderMarkdown(r: PeerResult): string {
  const { toolrl: a, trl: b } = r;
  const endA = a.validation.at(-1);
  const endB = b.validation.at(-1);
  const target = endB?.reward ?? null;
  const endLabel =
    endA?.step === endB?.step
      ? `v${endA?.step ?? '?'}`
      : `the last (toolrl v${endA?.step ?? '?'}, TRL v${endB?.step ?? '?'})`;
  const toA = target === null ? undefined : secondsToReward(a, target);
  const toB = target === null ? undefined : secondsToReward(b, target);
  const reached = (s: number | undefined, v: ValidationPoint[]) =>
    s === undefined ? 'not reached' : `${f(s, 1)} s (v${v.find((p) => p.atS === s)?.step})`;
  const lines = [
    `\`${r.command}\`, ${r.date}, ${r.cores} cores (${r.cpu}); 1-minute load average ${r.load.toFixed(1)} when it ` +
      `began, ${r.loadAfter.toFixed(1)} at the end. TRL ${r.versions['trl']} (transformers ${r.versions['transformers']}, ` +
      `torch ${r.versions['torch']}, accelerate ${r.versions['accelerate']}, datasets ${r.versions['datasets']}) in .cache/peer-trl-venv.`,
    '',
    `| ${a.steps === b.steps ? `${r.steps} learner steps` : `learner steps: toolrl ${a.steps}, TRL ${b.steps} (--max-steps ${r.steps})`} | toolrl (\`toolrl train\`, embedded${r.mode ? `, ${r.mode}` : ''}) | TRL \`GRPOTrainer\` (tools) | toolrl / TRL |`,
    '|---|---|---|---|',
    `| RL stage wall-clock (v0 ready to the last validation written, validations included) | ${f(a.rlS, 1)} s | ${f(b.rlS, 1)} s | ${ratio(a.rlS, b.rlS)} |`,
    `| RL stage wall-clock to TRL's final validation reward (${f(target, 3)}), first validation at or above it | ${reached(toA, a.validation)} | ${reached(toB, b.validation)} | ${toA !== undefined && toB !== undefined ? ratio(toA, toB) : '-'} |`,
    `| seconds per learner step | ${f(a.stepS)} | ${f(b.stepS)} | ${ratio(a.stepS, b.stepS)} |`,
    `| learner steps per second (RL stage) | ${f(a.steps / a.rlS, 3)} | ${f(b.steps / b.rlS, 3)} | ${ratio(a.steps / a.rlS, b.steps / b.rlS)} |`,
    `| completions sampled per second (RL stage) | ${f(a.sampled / a.rlS, 1)} | ${f(b.sampled / b.rlS, 1)} | ${ratio(a.sampled / a.rlS, b.sampled / b.rlS)} |`,
    `| completions trained per second (RL stage) | ${f(a.trained / a.rlS, 1)} | ${f(b.trained / b.rlS, 1)} | ${ratio(a.trained / a.rlS, b.trained / b.rlS)} |`,
    `| tokens the model sampled per episode (tool responses excluded) | ${f(a.responseTokens, 1)} | ${f(b.responseTokens, 1)} | |`,
    `| train reward, first -> last step | ${f(a.rewardFirst, 3)} -> ${f(a.rewardLast, 3)} | ${f(b.rewardFirst, 3)} -> ${f(b.rewardLast, 3)} | |`,
    `| validation accuracy, v0 -> ${endLabel} | ${pct(a.validation[0]?.accuracy)} -> ${pct(endA?.accuracy)} | ${pct(b.validation[0]?.accuracy)} -> ${pct(endB?.accuracy)} | |`,
    `| validation reward, v0 -> ${endLabel} | ${f(a.validation[0]?.reward, 3)} -> ${f(endA?.reward, 3)} | ${f(b.validation[0]?.reward, 3)} -> ${f(endB?.reward, 3)} | |`,
    `| whole process wall-clock | ${f(a.commandS, 1)} s (warm start included) | ${f(b.commandS, 1)} s (loading, v0 validation included) | |`,
    ...(b.bridgeS !== undefined
      ? [
          `| TRL's wait on the bridge (toolrl's calculator and reward over a pipe), whole process | | ${f(b.bridgeS, 1)} s | |`,
        ]
      : []),
    '',
    'Validation curve (64 held-out questions x 4 samples; accuracy = the boxed answer equals the ground truth; seconds from the start of the RL stage to the end of each validation):',
    '',
    '| policy version | toolrl accuracy | toolrl reward | toolrl at | TRL accuracy | TRL reward | TRL at |',
    '|---|---|---|---|---|---|---|',
  ];
  const versions = [...new Set([...a.validation, ...b.validation].map((v) => v.step))].sort((x, y) => x - y);
  for (const v of versions) {
    const x = a.validation.find((p) => p.step === v);
    const y = b.validation.find((p) => p.step === v);
    lines.push(
      `| v${v} | ${pct(x?.accuracy)} | ${f(x?.reward, 3)} | ${x ? `${f(x.atS, 1)} s` : '-'} | ${pct(y?.accuracy)} | ${f(y?.reward, 3)} | ${y ? `${f(y.atS, 1)} s` : '-'} |`,
    );
  }
  if (r.trlFrom)
    lines.push(
      '',
      `TRL's side is the run of ${r.trlFrom.date} (\`${r.trlFrom.command}\`), read from its result file (\`--trl-result\`): ` +
        "TRL's run does not depend on toolrl's mode, so it was not trained again (the versions above are that run's; the load is this one's).",
    );
  lines.push('', 'What the two runs cannot hold equal:', '', ...r.differences.map((d) => `- ${d}`));
  return lines.join('\n');
}

/**
 * Where --write puts the table: the quick start's block ("Peer: TRL") or, for another config or the asynchronous
 * mode, a block of its own (`bench/peer-trl:smollm2`, `bench/peer-trl:smollm2:async`), so no run replaces another's.
 */
export function blockKey(configName: string, deterministic: boolean): string {
  return `bench/peer-trl${configName === 'quickstart' ? '' : `:${configName}`}${deterministic ? '' : ':async'}`;
}
