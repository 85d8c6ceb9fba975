// `npx tsx bench/learning/index.ts [--seeds 0,1,2] [--config examples/quickstart/run.yaml] [--write]`: the main
// job, run as a user runs it (`toolrl train`, a child process, the shipped config and data) once per seed, and what
// it learned in numbers: validation accuracy (mean@k) right after the warm start and at the end, the RL stage's
// gain, the wall-clock from the command's start to the first validation at >= 50% and >= 80%, seconds per learner
// step, trajectories per second of the RL stage, and the whole command's wall-clock.
//
// A seed sets trainer.seed (the model's random weights, the warm start's batches, the data order) and rollout.seed
// (sampling), as the README's `trainer.seed=N rollout.seed=N` overrides do. `--write` puts the table into
// BENCHMARKS.md ("Learning") between the task's markers (the config's folder name: `quickstart`, `chained`) and
// each run's reward/accuracy plot into bench/learning/<task>-seed-N.png.
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { readEvalSummaries, readStepRows } from '../run-folder.ts';

const REPO = resolve(import.meta.dirname, '../..');
const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '0,1,2' },
    config: { type: 'string', default: 'examples/quickstart/run.yaml' },
    'max-steps': { type: 'string' },
    write: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'usage: npx tsx bench/learning/index.ts [--seeds 0,1,2] [--config RUN.yaml] [--max-steps N] [--keep]\n' +
      '         [--write]   (rewrites BENCHMARKS.md "Learning" and the plots in bench/learning/)\n',
  );
  process.exit(0);
}

/** The task a config trains: its example folder's name (examples/chained/run.yaml -> chained). */
export const taskOf = (config: string): string => basename(dirname(resolve(REPO, config)));

interface Eval {
  readonly version: number;
  readonly accuracy: number;
  readonly passAtK: number;
  readonly k: number;
  readonly at: number; // ms since the epoch, when the summary was written
}

export interface SeedResult {
  readonly seed: number;
  readonly status: string;
  readonly wallS: number;
  readonly steps: number;
  readonly start: Eval | undefined;
  readonly end: Eval | undefined;
  readonly toHalfS: number | undefined;
  readonly toEightyS: number | undefined;
  readonly stepS: number;
  readonly trajPerS: number;
  readonly rewardStart: number | undefined;
  readonly rewardEnd: number | undefined;
  readonly plot: string | undefined;
}

function readEvals(runDir: string): Eval[] {
  return readEvalSummaries(runDir).map((s) => ({
    version: s.policyVersion,
    accuracy: s.accuracy,
    passAtK: s.passAtK,
    k: s.samplesPerPrompt,
    at: s.at,
  }));
}

function runSeed(seed: number, work: string, outDir: string | undefined): SeedResult {
  const dir = join(work, `seed-${seed}`);
  mkdirSync(dir, { recursive: true });
  // The README's own command for a seed: Hydra-style overrides on the shipped config.
  const overrides = [`trainer.seed=${seed}`, `rollout.seed=${seed}`];
  const args = [
    join(REPO, 'bin', 'toolrl.mjs'),
    'train',
    values.config,
    ...overrides,
    '--workdir',
    dir,
    '--json',
  ];
  if (values['max-steps']) args.push('--max-steps', values['max-steps']);
  process.stderr.write(
    `seed ${seed}: toolrl train ${values.config} trainer.seed=${seed} rollout.seed=${seed}\n`,
  );
  const t0 = Date.now();
  const run = spawnSync(process.execPath, args, { cwd: REPO, encoding: 'utf8', maxBuffer: 256 << 20 });
  const wallS = (Date.now() - t0) / 1000;
  if (run.status !== 0)
    throw new Error(`seed ${seed}: toolrl train exited ${run.status}: ${run.stderr.slice(-2000)}`);
  const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
  const runDir: string = summary.runDir;
  const evals = readEvals(runDir);
  const rows = readStepRows(runDir);
  const start = evals[0];
  const end = evals.at(-1);
  const first = (x: number) => evals.find((e) => e.accuracy >= x);
  const since = (e: Eval | undefined) => (e ? (e.at - t0) / 1000 : undefined);
  // The RL stage: from the warm-started policy's validation to the last one.
  const rlS = start && end ? (end.at - start.at) / 1000 : wallS;
  const trajectories = rows.reduce((a, r) => a + (r.trajectories ?? 0), 0);
  let plot: string | undefined;
  if (outDir) {
    plot = join(outDir, `${taskOf(values.config)}-seed-${seed}.png`);
    copyFileSync(join(runDir, 'metrics', 'reward_curve.png'), plot);
  }
  return {
    seed,
    status: summary.status,
    wallS,
    steps: rows.length,
    start,
    end,
    toHalfS: since(first(0.5)),
    toEightyS: since(first(0.8)),
    stepS: rows.length ? rlS / rows.length : Number.NaN,
    trajPerS: rlS > 0 ? trajectories / rlS : Number.NaN,
    rewardStart: rows[0]?.reward_mean,
    rewardEnd: rows.at(-1)?.reward_mean,
    plot,
  };
}

const pct = (x: number | undefined) => (x === undefined ? '-' : `${(100 * x).toFixed(1)}%`);
/** Minutes and seconds, rounded to the second first (179.6 s is 3m00s, not 2m60s). */
const secs = (x: number | undefined) => {
  if (x === undefined) return 'not reached';
  const s = Math.round(x);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
};

export function renderTable(results: readonly SeedResult[]): string {
  const k = results[0]?.end?.k ?? 1;
  const lines = [
    `| seed | accuracy after warm start (mean@${k}) | accuracy at the end | RL gain | pass@${k} end | ` +
      'to 50% | to 80% | command wall-clock | s / learner step | trajectories / s | train reward first -> last step |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    const gain = r.start && r.end ? `${(100 * (r.end.accuracy - r.start.accuracy)).toFixed(1)} pts` : '-';
    lines.push(
      `| ${r.seed} | ${pct(r.start?.accuracy)} | ${pct(r.end?.accuracy)} | ${gain} | ${pct(r.end?.passAtK)} | ` +
        `${secs(r.toHalfS)} | ${secs(r.toEightyS)} | ${secs(r.wallS)} | ${r.stepS.toFixed(2)} | ` +
        `${r.trajPerS.toFixed(1)} | ${r.rewardStart?.toFixed(3) ?? '-'} -> ${r.rewardEnd?.toFixed(3) ?? '-'} |`,
    );
  }
  return lines.join('\n');
}

const marker = (task: string, end: 'begin' | 'end') => `<!-- bench/learning:${task}:${end} -->`;

function main(): void {
  const seeds = values.seeds.split(',').map((s) => Number.parseInt(s, 10));
  const work = mkdtempSync(join(tmpdir(), 'toolrl-learning-'));
  const outDir = values.write ? join(REPO, 'bench', 'learning') : undefined;
  const load = loadavg()[0]!;
  const results = seeds.map((s) => runSeed(s, work, outDir));
  const table = renderTable(results);
  process.stdout.write(`${table}\n`);
  if (!values.keep) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`runs kept in ${work}\n`);
  if (values.write) {
    const path = join(REPO, 'BENCHMARKS.md');
    const text = readFileSync(path, 'utf8');
    const task = taskOf(values.config);
    const BEGIN = marker(task, 'begin');
    const END = marker(task, 'end');
    const config = task === 'quickstart' ? '' : ` --config ${values.config}`;
    const block =
      `${BEGIN}\n\`npx tsx bench/learning/index.ts${config} --seeds ${values.seeds} --write\` on ${availableParallelism()} ` +
      `cores (1-minute load average ${load.toFixed(1)} when it began), ${new Date().toISOString().slice(0, 10)}:\n\n` +
      `${table}\n${END}`;
    const i = text.indexOf(BEGIN);
    const j = text.indexOf(END);
    if (i < 0 || j < 0) throw new Error(`BENCHMARKS.md has no ${BEGIN} ... ${END} block`);
    writeFileSync(path, text.slice(0, i) + block + text.slice(j + END.length));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main();
