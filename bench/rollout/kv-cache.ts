// The rollout decoder's KV cache budget, as a ratio in one script: `toolrl eval` of one policy on one dataset, with
// the cache a process keeps between a trajectory's turns set to each budget in turn (`TOOLRL_KV_CACHE_MB`; `default`
// leaves it unset: a sixth of the machine's memory, 1-4 GiB, what embedded runs and `toolrl eval` keep). In a
// deterministic run a trajectory whose cache was pushed out rebuilds it pass by pass so that its next turn samples
// exactly what it would have, so every budget must give the same answers: the script checks that the summaries are
// equal and reports the wall time of each budget over the default's.
//
//   npx tsx bench/rollout/kv-cache.ts --policy runs/<runId>/policy/v16 [--data examples/smollm2/data/val.parquet]
//        [--budgets 1024,default] [--rounds 2] [--threads N]
//
// The policy is a finished SmolLM2 run's (examples/smollm2): a policy that calls its tool, so trajectories have a
// second turn to continue. Rounds rotate the order of the budgets, so a load swing on a shared machine hits both
// sides of the ratio; the figure is the median over rounds, with the range.
import { execFile } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { EvalSummarySchema } from '#shared/pipeline/eval';
import { embeddedKvCacheBytes } from '#shared/runtime/embedded';
import { REPO_ROOT } from '../support/tiny-model.ts';
import { cell } from './report.ts';

const run = promisify(execFile);
const { values } = parseArgs({
  options: {
    policy: { type: 'string' },
    data: { type: 'string', default: 'examples/smollm2/data/val.parquet' },
    budgets: { type: 'string', default: '1024,default' },
    rounds: { type: 'string', default: '2' },
    threads: { type: 'string' },
  },
});
if (!values.policy) {
  process.stderr.write(
    'usage: npx tsx bench/rollout/kv-cache.ts --policy runs/<runId>/policy/vN [--data FILE] [--budgets 1024,default]\n' +
      '         [--rounds 2] [--threads N]\n',
  );
  process.exit(2);
}
const budgets = values.budgets.split(',').map((b) => b.trim());
for (const b of budgets) {
  if (b !== 'default' && !/^[1-9]\d*$/.test(b))
    throw new Error(`--budgets: "${b}" is neither MiB nor "default"`);
}
const rounds = Number(values.rounds);
if (!Number.isInteger(rounds) || rounds < 1)
  throw new Error(`--rounds must be an integer >= 1, got ${values.rounds}`);

/** The summary fields two evaluations of the same answers share exactly (not the run id or the time). */
const answersOf = (s: ReturnType<typeof EvalSummarySchema.parse>) =>
  JSON.stringify([
    s.trajectories,
    s.rewardMean,
    s.rewardStd,
    s.accuracy,
    s.passAtK,
    s.toolCallsPerTrajectory,
    s.components,
    s.finishReasons,
  ]);

async function evaluate(
  budget: string,
): Promise<{ seconds: number; answers: string; accuracy: number | null }> {
  const env = { ...process.env };
  delete env.TOOLRL_KV_CACHE_MB;
  if (budget !== 'default') env.TOOLRL_KV_CACHE_MB = budget;
  const args = [
    'toolrl',
    'eval',
    '--policy',
    resolve(values.policy!),
    '--data',
    resolve(values.data),
    '--json',
  ];
  if (values.threads) args.push('--threads', values.threads);
  const start = process.hrtime.bigint();
  const { stdout } = await run('npx', args, { cwd: REPO_ROOT, env, maxBuffer: 64 * 2 ** 20 });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const summary = EvalSummarySchema.parse(JSON.parse(stdout));
  return { seconds, answers: answersOf(summary), accuracy: summary.accuracy };
}

const times = new Map<string, number[]>(budgets.map((b) => [b, []]));
let reference: string | undefined;
let accuracy: number | null = null;
const loads: number[] = [];
for (let r = 0; r < rounds; r++) {
  const order = budgets.map((_, i) => budgets[(i + r) % budgets.length]!);
  for (const b of order) {
    loads.push(loadavg()[0]!);
    const res = await evaluate(b);
    process.stderr.write(
      `round ${r + 1}, budget ${b}: ${res.seconds.toFixed(1)} s, accuracy ${res.accuracy}\n`,
    );
    if (reference === undefined) {
      reference = res.answers;
      accuracy = res.accuracy;
    } else if (res.answers !== reference) {
      throw new Error(
        `budget ${b} gave other answers than the first evaluation: the cache budget changed sampling`,
      );
    }
    times.get(b)!.push(res.seconds);
  }
}

const base = budgets.includes('default') ? 'default' : budgets[0]!;
const mib = (b: string) =>
  b === 'default' ? Math.floor(embeddedKvCacheBytes(totalmem(), {}) / 2 ** 20) : Number(b);
const lines = [
  `\`npx tsx bench/rollout/kv-cache.ts --policy ${values.policy} --data ${values.data} --budgets ${values.budgets} --rounds ${rounds}${values.threads ? ` --threads ${values.threads}` : ''}\`` +
    ` — ${cpus()[0]?.model.trim()}, ${cpus().length} cores; 1-minute load average ${cell(loads)}. Every evaluation gave the same answers ` +
    `(accuracy ${accuracy === null ? 'n/a' : `${(accuracy * 100).toFixed(1)}%`}). Median (min-max) over ${rounds} rounds.`,
  '',
  '| KV cache budget | wall time of the evaluation | over the default |',
  '|---|---|---|',
  ...budgets.map((b) => {
    const t = times.get(b)!;
    const ratios = t.map((x, i) => x / times.get(base)![i]!);
    return (
      `| ${b === 'default' ? `default (${mib(b)} MiB)` : `${mib(b)} MiB`} | ${cell(t, 1, ' s')} | ` +
      `${cell(ratios, 2, 'x')} |`
    );
  }),
];
process.stdout.write(`${lines.join('\n')}\n`);
