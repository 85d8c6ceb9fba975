// `npx tsx bench/embedded/index.ts [--config examples/quickstart/run.yaml]`: one embedded run (`toolrl train`, the
// same code) with its RL stage's wall-clock broken down: the learner's phases (its `timing_s/*` metrics), the Node
// side's work by category (handlers, sampling, policy loading, blob store, queues) and idle time, the CPU time of
// each process and thread, and how often more threads were runnable than there are cores (oversubscription).
//
// The RL stage runs from the learner's `ready` line (model loaded, warm start done, v0 published) to its `done`.
// `--write LABEL` puts the tables into BENCHMARKS.md under that label ("before", "after") between markers.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { embeddedOrtThreads, learnerPython } from '#shared/runtime/embedded';
import { train } from '#shared/runtime/train';
import { instrument, Spans } from './probe.ts';
import { CpuSampler, type CpuWindow } from './procstat.ts';
import { type Breakdown, renderReport, replaceSection } from './report.ts';

const REPO = resolve(import.meta.dirname, '../..');
const { values } = parseArgs({
  options: {
    config: { type: 'string', default: 'examples/quickstart/run.yaml' },
    'max-steps': { type: 'string' },
    threads: { type: 'string' },
    // Config overrides (`toolrl train CONFIG KEY=VALUE` takes them the same way), e.g. model.lora.layers_to_transform=[22,23].
    set: { type: 'string', multiple: true, default: [] },
    workdir: { type: 'string' },
    write: { type: 'string' },
    keep: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'usage: npx tsx bench/embedded/index.ts [--config RUN.yaml] [--max-steps N] [--threads N] [--workdir DIR] [--keep]\n' +
      '         [--set KEY=VALUE ...]   (config overrides, as toolrl train takes them)\n' +
      '         [--write before|after]   (rewrites that block of BENCHMARKS.md, "Embedded run")\n',
  );
  process.exit(0);
}

const cores = availableParallelism();
// The rollout decoder's ONNX Runtime threads, as `toolrl train --threads` sets them (default: the embedded default,
// which also borrows all cores while the learner waits; a fixed count does not).
const ortThreads = values.threads ? Number(values.threads) : embeddedOrtThreads();
const lends = !values.threads && ortThreads < cores;
if (!Number.isInteger(ortThreads) || ortThreads < 1)
  throw new Error(`--threads: expected a positive integer, got ${values.threads}`);
const workdir = values.workdir
  ? resolve(values.workdir)
  : mkdtempSync(join(tmpdir(), 'toolrl-bench-embedded-'));
const spans = new Spans();
const sampler = new CpuSampler(cores);
sampler.watch('node (pipeline)', process.pid);
let pipelineRef: Parameters<NonNullable<Parameters<typeof train>[0]['onPipeline']>>[0] | undefined;
let tReady = 0;
let tDone = 0;
let window: CpuWindow | undefined;
const load = [loadavg()[0]!];
const loadTimer = setInterval(() => load.push(loadavg()[0]!), 5000).unref();

const result = await train({
  configPath: values.config,
  overrides: values.set ?? [],
  workdir,
  ...(values['max-steps'] ? { maxSteps: Number(values['max-steps']) } : {}),
  ...(values.threads ? { ortThreads } : {}),
  onPipeline: (p) => {
    pipelineRef = p;
    instrument(p, spans);
  },
  onEvent: (e) => {
    const now = performance.now();
    if (e.kind === 'invoke') spans.add(`fn:${e.result.function}`, now - e.result.ms, now);
    if (e.kind === 'learner' && e.line.type === 'ready') {
      tReady = now;
      const pid = pipelineRef?.learner?.pid;
      if (pid) sampler.watch('learner (python)', pid);
      sampler.start();
      process.stderr.write('bench/embedded: RL stage started\n');
    }
    if (e.kind === 'learner' && e.line.type === 'step')
      process.stderr.write(`bench/embedded: step ${e.line.step}\n`);
    if (e.kind === 'learner' && e.line.type === 'done') {
      tDone = now;
      window = sampler.stop();
    }
  },
});
clearInterval(loadTimer);
if (result.status !== 'completed' || !window) {
  process.stderr.write(`bench/embedded: the run did not complete (${result.status}: ${result.reason})\n`);
  process.exit(1);
}

const rows = readFileSync(result.metricsPath, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l) as Record<string, number>);
const learnerPhases: Record<string, number> = {};
for (const r of rows)
  for (const [k, v] of Object.entries(r))
    if (k.startsWith('timing_s/')) learnerPhases[k.slice(9)] = (learnerPhases[k.slice(9)] ?? 0) + v;
const sum = (k: string) => rows.reduce((s, r) => s + (r[k] ?? 0), 0);

const torchThreads = spawnSync(learnerPython(), ['-c', 'import torch; print(torch.get_num_threads())'], {
  encoding: 'utf8',
});
const node = (cats: string[]) => spans.union(cats, tReady, tDone);
const fns = spans.categories().filter((c) => c.startsWith('fn:'));
const breakdown: Breakdown = {
  // The arguments that shape the run, as the report's command line shows them.
  config:
    values.config +
    (values['max-steps'] ? ` --max-steps ${values['max-steps']}` : '') +
    (values.threads ? ` --threads ${values.threads}` : '') +
    (values.set ?? []).map((o) => ` --set '${o}'`).join(''),
  cpu: `${cpus()[0]?.model.split(' ').slice(0, 2).join(' ') ?? 'CPU'}, ${cores} cores`,
  load: load.sort((a, b) => a - b),
  steps: rows.length,
  rlWallS: (tDone - tReady) / 1000,
  totalWallS: result.seconds,
  trajectories: sum('trajectories'),
  tokens: sum('tokens'),
  responseLengthMean: sum('response_length_mean') / Math.max(1, rows.length),
  stepTimeMean: sum('step_time_s') / Math.max(1, rows.length),
  learner: learnerPhases,
  node: {
    functions: Object.fromEntries(fns.map((f) => [f.slice(3), { s: node([f]), calls: spans.count(f) }])),
    sampling: { s: node(['sampling']), calls: spans.count('sampling') },
    acquire: {
      s: node(['policy acquire (new versions load here)']),
      calls: spans.count('policy acquire (new versions load here)'),
    },
    blobs: { s: node(['blob store']), calls: spans.count('blob store') },
    queues: { s: node(['queues']), calls: spans.count('queues') },
    busy: node(fns),
  },
  cpuWindow: window,
  threads: {
    ort: lends ? `${ortThreads} (${cores} while the learner waits)` : String(ortThreads),
    torch: Number(torchThreads.stdout.trim()) || NaN,
  },
};
const text = renderReport(breakdown, values.write ?? 'run');
process.stdout.write(`${text}\n`);
if (values.write) {
  const path = join(REPO, 'BENCHMARKS.md');
  writeFileSync(path, replaceSection(readFileSync(path, 'utf8'), values.write, text));
  process.stderr.write(`bench/embedded: wrote the "${values.write}" block of BENCHMARKS.md\n`);
}
if (!values.keep && !values.workdir && existsSync(workdir)) rmSync(workdir, { recursive: true, force: true });
