// The quickstart, whole, both ways a user runs it on one machine, timed back to back in one command: embedded
// (`toolrl train examples/quickstart/run.yaml`) and on LocalStack as the README's block runs it (a fresh environment
// deployed from the CDK template with the topology's own settings, the local worker, `toolrl submit`, until run.json
// says completed). Prints both wall-clocks, their ratio, the load average while each ran, and each version's
// validation numbers side by side (a deterministic run gives the same numbers both ways).
//   npx tsx bench/pipeline/quickstart.ts [--config examples/quickstart/run.yaml] [--repeats 1] [--keep] [--write]
//       [--only localstack] [-- OVERRIDE ...]    e.g. -- trainer.max_steps=8  (Hydra-style, applied to both runs)
// Also counts the S3 and SQS requests LocalStack served while the LocalStack run ran (its own request log: the
// worker's, the learner's and this script's polls of run.json), per operation, per trajectory and per step.
// `--only localstack` runs that half alone, to compare request counts (no ratio).
// With --repeats N the order alternates (embedded first, then LocalStack first, ...), so a change of load on a
// shared machine weighs on both. Starts LocalStack (LOCALSTACK_PORT, default 4566) when it is not running.
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type AwsClientOptions, s3Client } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { keys } from '#shared/topology';
import {
  deployLocalStackEnvironment,
  destroyLocalStackEnvironment,
} from '../../infra/lib/localstack-stack.ts';
import { readEvalSummaries } from '../run-folder.ts';
import { ensureLocalStack, localStackLog, loggedRequests } from '../support/localstack.ts';

const REPO = resolve(import.meta.dirname, '../..');
const NODE = [process.execPath, '--disable-warning=NodeVersionSupportWarning'];

const { values: args, positionals: overrides } = parseArgs({
  allowPositionals: true,
  options: {
    config: { type: 'string', default: 'examples/quickstart/run.yaml' },
    repeats: { type: 'string', default: '1' },
    keep: { type: 'boolean', default: false },
    only: { type: 'string' },
    write: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (args.help) {
  process.stdout.write(
    'usage: npx tsx bench/pipeline/quickstart.ts [--config RUN.yaml] [--repeats N] [--keep] [--write] [-- OVERRIDE ...]\n',
  );
  process.exit(0);
}

interface Eval {
  readonly version: number;
  readonly accuracy: number;
  readonly rewardMean: number;
  readonly prompts: number;
  /** Seconds from the command's start until the summary was written. */
  readonly atS: number;
}

interface Timed {
  readonly mode: 'embedded' | 'localstack';
  readonly wallS: number;
  /** Mean of the 1-minute load average sampled every 5 s while it ran. */
  readonly load: number;
  readonly evals: Eval[];
  /** The learner's seconds per phase over the RL steps (`timing_s/<phase>` summed over metrics.jsonl). */
  readonly phases: Record<string, number>;
  readonly steps: number;
  /** sha256 of v0's weights: the same warm start both ways when equal. */
  readonly v0Weights: string;
  /** LocalStack runs: the S3 and SQS requests it served while the run ran, by `service.Operation`. */
  readonly requests?: Record<string, number>;
  /** Trajectories the run sampled: training groups x n plus validation groups x val n. */
  readonly trajectories?: number;
}

/** `timing_s/<phase>` summed over the learner's step rows. */
function phaseSums(metricsJsonl: string): { phases: Record<string, number>; steps: number } {
  const phases: Record<string, number> = {};
  const rows = metricsJsonl.trim().split('\n').filter(Boolean);
  for (const line of rows)
    for (const [k, v] of Object.entries(JSON.parse(line) as Record<string, unknown>))
      if (k.startsWith('timing_s/') && typeof v === 'number')
        phases[k.slice('timing_s/'.length)] = (phases[k.slice('timing_s/'.length)] ?? 0) + v;
  return { phases, steps: rows.length };
}

const weightsOf = (manifest: string): string => {
  const files = (JSON.parse(manifest) as { files: Record<string, { sha256: string }> }).files;
  return files['model.onnx.data']?.sha256 ?? Object.values(files)[0]?.sha256 ?? '';
};

/** Samples the 1-minute load average every 5 s until stopped; returns the mean. */
function loadSampler(): () => number {
  const xs = [loadavg()[0]!];
  const t = setInterval(() => xs.push(loadavg()[0]!), 5000);
  return () => {
    clearInterval(t);
    xs.push(loadavg()[0]!);
    return xs.reduce((a, b) => a + b, 0) / xs.length;
  };
}

function runEmbedded(): Timed {
  const work = mkdtempSync(join(tmpdir(), 'toolrl-bench-qs-'));
  try {
    process.stderr.write(`embedded: toolrl train ${args.config} ${overrides.join(' ')}\n`);
    const stop = loadSampler();
    const t0 = Date.now();
    const run = spawnSync(
      NODE[0]!,
      [...NODE.slice(1), 'bin/toolrl.mjs', 'train', args.config, ...overrides, '--workdir', work, '--json'],
      { cwd: REPO, encoding: 'utf8', maxBuffer: 256 << 20 },
    );
    const wallS = (Date.now() - t0) / 1000;
    const load = stop();
    if (run.status !== 0) throw new Error(`toolrl train exited ${run.status}: ${run.stderr.slice(-2000)}`);
    const summary = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { runDir: string; status: string };
    if (summary.status !== 'completed') throw new Error(`the embedded run ended ${summary.status}`);
    const evals = readEvalSummaries(summary.runDir).map((e) => ({
      version: e.policyVersion,
      accuracy: e.accuracy,
      rewardMean: e.rewardMean,
      prompts: (e as unknown as { prompts: number }).prompts,
      atS: (e.at - t0) / 1000,
    }));
    const { phases, steps } = phaseSums(readFileSync(join(summary.runDir, 'metrics/metrics.jsonl'), 'utf8'));
    const v0Weights = weightsOf(readFileSync(join(summary.runDir, 'policy/v0/manifest.json'), 'utf8'));
    return { mode: 'embedded', wallS, load, evals, phases, steps, v0Weights };
  } finally {
    if (args.keep) process.stderr.write(`embedded: kept ${work}\n`);
    else rmSync(work, { recursive: true, force: true });
  }
}

/** Waits for a line of the worker's log that starts with `prefix`; fails if the worker exits first. */
async function waitForLine(child: ChildProcess, logPath: string, prefix: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (
    !readFileSync(logPath, 'utf8')
      .split('\n')
      .some((l) => l.startsWith(prefix))
  ) {
    if (child.exitCode !== null)
      throw new Error(`the worker exited: ${readFileSync(logPath, 'utf8').slice(-2000)}`);
    if (Date.now() > end) throw new Error(`no ${prefix} from the worker within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function runLocalStack(client: AwsClientOptions): Promise<Timed> {
  const env = `qs${randomBytes(3).toString('hex')}`;
  const dir = mkdtempSync(join(tmpdir(), `toolrl-bench-${env}-`));
  process.stderr.write(
    `localstack: deploying environment ${env} (the topology's settings, as localstack.sh deploy)\n`,
  );
  const resources = await deployLocalStackEnvironment({ env, client });
  const logPath = join(dir, 'worker.log');
  const log = openSync(logPath, 'a');
  const worker = spawn(
    NODE[0]!,
    [
      ...NODE.slice(1),
      '--import',
      'tsx',
      'shared/operator/local-worker.ts',
      '--env',
      env,
      '--state-dir',
      join(dir, 'learners'),
    ],
    { cwd: REPO, env: process.env, stdio: ['ignore', log, log], detached: true },
  );
  closeSync(log);
  try {
    await waitForLine(worker, logPath, '{"worker":"ready"', 120_000);
    process.stderr.write(
      `localstack: toolrl submit --env ${env} --config ${args.config} ${overrides.join(' ')}\n`,
    );
    const stop = loadSampler();
    const requestLog = localStackLog();
    const logFrom = requestLog ? statSync(requestLog).size : 0;
    const t0 = Date.now();
    const submit = spawnSync(
      NODE[0]!,
      [...NODE.slice(1), 'bin/toolrl.mjs', 'submit', '--env', env, '--config', args.config, ...overrides],
      { cwd: REPO, encoding: 'utf8' },
    );
    if (submit.status !== 0) throw new Error(`toolrl submit exited ${submit.status}: ${submit.stderr}`);
    const runId = submit.stdout.trim();
    const blobs = new S3BlobStore(s3Client(client), resources.bucket);
    let status = '';
    for (;;) {
      const raw = await blobs.get(keys.runJson(runId));
      status = raw ? (JSON.parse(Buffer.from(raw).toString('utf8')) as { status: string }).status : '';
      if (status === 'completed' || status === 'failed') break;
      if (worker.exitCode !== null)
        throw new Error(`the worker exited: ${readFileSync(logPath, 'utf8').slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    const wallS = (Date.now() - t0) / 1000;
    const load = stop();
    const requests = requestLog ? loggedRequests(requestLog, logFrom) : undefined;
    if (status !== 'completed') throw new Error(`the LocalStack run ${runId} ended ${status}`);
    const trajectories = (await blobs.listKeys(`${keys.runPrefix(runId)}trajectories/`)).length;
    const text = async (key: string) =>
      Buffer.from((await blobs.get(key)) ?? new Uint8Array()).toString('utf8');
    const evals: Eval[] = [];
    for (const key of await blobs.listKeys(keys.evalSummaries(runId))) {
      const s = JSON.parse(await text(key));
      evals.push({
        version: s.policyVersion,
        accuracy: s.accuracy,
        rewardMean: s.rewardMean,
        prompts: s.prompts,
        atS: (Date.parse(s.createdAt) - t0) / 1000,
      });
    }
    evals.sort((a, b) => a.version - b.version);
    const { phases, steps } = phaseSums(await text(`${keys.metrics(runId)}metrics.jsonl`));
    const v0Weights = weightsOf(await text(`${keys.policyVersion(runId, 0)}manifest.json`));
    return {
      mode: 'localstack',
      wallS,
      load,
      evals,
      phases,
      steps,
      v0Weights,
      ...(requests ? { requests } : {}),
      trajectories,
    };
  } finally {
    if (worker.exitCode === null) {
      const exited = new Promise((r) => worker.once('exit', r));
      worker.kill('SIGTERM');
      await exited;
    }
    if (args.keep) process.stderr.write(`localstack: kept environment ${env} and ${dir}\n`);
    else {
      await destroyLocalStackEnvironment(env, client).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  }
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
const evalLine = (e: Eval[]) => e.map((x) => `v${x.version} ${pct(x.accuracy)}`).join(', ');
const sameEval = (a: Eval[], b: Eval[]) =>
  a.length === b.length &&
  a.every(
    (x, i) =>
      x.version === b[i]?.version && x.accuracy === b[i]?.accuracy && x.rewardMean === b[i]?.rewardMean,
  );

const ls = ensureLocalStack();
const pairs: { embedded: Timed; localstack: Timed }[] = [];
const alone: Timed[] = [];
try {
  for (let i = 0; i < Number(args.repeats); i++) {
    if (args.only === 'localstack') {
      const localstack = await runLocalStack(ls.client);
      alone.push(localstack);
      process.stderr.write(
        `run ${i + 1}: LocalStack ${localstack.wallS.toFixed(0)} s (load ${localstack.load.toFixed(1)})\n`,
      );
      continue;
    }
    // Alternate the order, so a load that rises or falls during the command weighs on both.
    let embedded: Timed;
    let localstack: Timed;
    if (i % 2 === 0) {
      embedded = runEmbedded();
      localstack = await runLocalStack(ls.client);
    } else {
      localstack = await runLocalStack(ls.client);
      embedded = runEmbedded();
    }
    pairs.push({ embedded, localstack });
    process.stderr.write(
      `pair ${i + 1}: embedded ${embedded.wallS.toFixed(0)} s (load ${embedded.load.toFixed(1)}), LocalStack ` +
        `${localstack.wallS.toFixed(0)} s (load ${localstack.load.toFixed(1)}): ${(localstack.wallS / embedded.wallS).toFixed(2)}x\n`,
    );
  }
} finally {
  ls.stop();
}

/** The LocalStack run's requests per trajectory and per learner step, by operation, most first. */
function requestLines(t: Timed): string[] {
  const trajectories = t.trajectories ?? 0;
  if (!t.requests || !trajectories) return [];
  const entries = Object.entries(t.requests).sort((a, b) => b[1] - a[1]);
  const total = entries.reduce((a, [, n]) => a + n, 0);
  const per = (n: number, d: number) => (n / d).toFixed(2);
  const steps = Math.max(1, t.steps);
  return [
    `LocalStack requests: ${total} for ${trajectories} trajectories and ${t.steps} steps: ` +
      `${per(total, trajectories)} a trajectory, ${per(total, steps)} a step`,
    `  by operation (a trajectory / a step): ${entries.map(([op, n]) => `${op} ${n} (${per(n, trajectories)} / ${per(n, steps)})`).join(', ')}`,
  ];
}

if (args.only === 'localstack') {
  for (const t of alone) {
    console.log(
      `LocalStack ${t.wallS.toFixed(0)} s (load ${t.load.toFixed(1)}); validation ${evalLine(t.evals)}`,
    );
    for (const l of requestLines(t)) console.log(l);
  }
  console.log(JSON.stringify({ config: args.config, overrides, alone }));
  process.exit(0);
}

const cpu = `${cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${availableParallelism()} cores`;
const sameEvals = pairs.every((p) => sameEval(p.embedded.evals, p.localstack.evals));
const rows = pairs.map(
  (p, i) =>
    `| ${i + 1} | ${p.embedded.wallS.toFixed(0)} s (load ${p.embedded.load.toFixed(1)}) | ` +
    `${p.localstack.wallS.toFixed(0)} s (load ${p.localstack.load.toFixed(1)}) | ${(p.localstack.wallS / p.embedded.wallS).toFixed(2)}x |`,
);
const command = `npx tsx bench/pipeline/quickstart.ts${args.config !== 'examples/quickstart/run.yaml' ? ` --config ${args.config}` : ''}${Number(args.repeats) > 1 ? ` --repeats ${args.repeats}` : ''}${overrides.length ? ` -- ${overrides.join(' ')}` : ''}`;
console.log(`${cpu}; ${args.config} ${overrides.join(' ')}`);
console.log(
  '| pair | embedded (toolrl train) | LocalStack (local worker, toolrl submit) | LocalStack / embedded |',
);
console.log('|---|---|---|---|');
for (const r of rows) console.log(r);
for (const [i, p] of pairs.entries()) {
  console.log(`validation, pair ${i + 1}: embedded ${evalLine(p.embedded.evals)}`);
  console.log(`validation, pair ${i + 1}: LocalStack ${evalLine(p.localstack.evals)}`);
}
console.log(`validation numbers identical both ways: ${sameEvals ? 'yes' : 'no'}`);
for (const [i, p] of pairs.entries()) {
  console.log(
    `pair ${i + 1}: v0 weights ${p.embedded.v0Weights === p.localstack.v0Weights ? 'identical' : 'differ'}; ` +
      `first validation written at ${p.embedded.evals[0]?.atS.toFixed(0)} s (embedded) and ` +
      `${p.localstack.evals[0]?.atS.toFixed(0)} s (LocalStack); learner steps ${p.embedded.steps} and ${p.localstack.steps}`,
  );
  const names = [...new Set([...Object.keys(p.embedded.phases), ...Object.keys(p.localstack.phases)])].sort();
  console.log(
    `  learner seconds by phase over the steps: ${names.map((n) => `${n} ${(p.embedded.phases[n] ?? 0).toFixed(0)}/${(p.localstack.phases[n] ?? 0).toFixed(0)}`).join(', ')} (embedded/LocalStack)`,
  );
}
for (const p of pairs) for (const l of requestLines(p.localstack)) console.log(l);
console.log(JSON.stringify({ cpu, config: args.config, overrides, pairs, sameEvals }));

if (args.write) {
  const path = join(REPO, 'BENCHMARKS.md');
  const begin = '<!-- quickstart-localstack:begin -->';
  const end = '<!-- quickstart-localstack:end -->';
  const block = [
    begin,
    `The whole quickstart both ways on one machine (${cpu}), back to back in one command: \`toolrl train\` against`,
    "the README's LocalStack block (a fresh environment with the topology's settings, the local worker, `toolrl submit`,",
    'until run.json says completed). The load is the mean 1-minute load average while each ran.',
    '',
    '| pair | embedded (toolrl train) | LocalStack (local worker, toolrl submit) | LocalStack / embedded |',
    '|---|---|---|---|',
    ...rows,
    '',
    `Validation (mean@4, ${pairs[0]?.embedded.evals[0]?.prompts ?? '?'} prompts): embedded ${evalLine(pairs[0]?.embedded.evals ?? [])}; LocalStack ${evalLine(pairs[0]?.localstack.evals ?? [])} (${sameEvals ? 'identical' : 'not identical'}).`,
    '',
    `Reproduce: \`${command} --write\`.`,
    end,
  ].join('\n');
  let md = readFileSync(path, 'utf8');
  const a = md.indexOf(begin);
  const b = md.indexOf(end);
  if (a >= 0 && b > a) md = md.slice(0, a) + block + md.slice(b + end.length);
  else {
    const at = md.indexOf('### On LocalStack');
    if (at < 0) throw new Error('BENCHMARKS.md has no "### On LocalStack" section');
    const next = md.indexOf('\n## ', at);
    md = `${md.slice(0, next).trimEnd()}\n\n${block}\n${md.slice(next)}`;
  }
  writeFileSync(path, md);
  console.log(`wrote the quickstart block under "### On LocalStack" in ${path}`);
}
process.exit(0);
