// bench/pipeline: overhead per trajectory of the embedded pipeline (queues with SQS semantics and their
// journals, the folder blob store, claim checks, zod parsing, the handlers and the local runtime) over the
// bare stage work, measured in the same process with the policy stubbed.
//   npx tsx bench/pipeline/index.ts [--groups 32] [--n 8] [--repeats 5] [--write]
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { RunResources } from '#shared/pipeline/run-resources';
import { EMBEDDED_SETTINGS, EmbeddedPipeline } from '#shared/runtime/embedded';
import type { FunctionSettings } from '#shared/runtime/local-runtime';
import type { FunctionName } from '#shared/topology';
import { keys } from '#shared/topology';
import { bareRun, prepareRun, scratch, type Workload, warmTools } from './harness.ts';
import { StubPolicyProvider } from './stub-policy.ts';

const { values: args } = parseArgs({
  options: {
    groups: { type: 'string', default: '32' },
    n: { type: 'string', default: '8' },
    repeats: { type: 'string', default: '5' },
    write: { type: 'boolean', default: false },
  },
});
const w: Workload = { groups: Number(args.groups), n: Number(args.n) };
const trajectories = w.groups * w.n;
/** Process CPU (all threads) since `c0`, ms. */
const cpuMs = (c0: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};
const cpu = { bare: [] as number[], embedded: [] as number[], serial: [] as number[] };

async function bare(): Promise<number> {
  const root = scratch('bare');
  const blobs = new FolderBlobStore(root);
  await prepareRun(blobs, 'bench', w);
  const resources = new RunResources(blobs, { scratchDir: join(root, '.scratch') });
  await warmTools(resources, 'bench');
  await bareRun(resources, 'bench', { groups: 1, n: 1 }); // warm the code paths
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const scored = await bareRun(resources, 'bench', w);
  const ms = performance.now() - t0;
  cpu.bare.push(cpuMs(c0));
  await resources.close();
  rmSync(root, { recursive: true, force: true });
  if (scored !== trajectories) throw new Error(`bare run scored ${scored} of ${trajectories}`);
  return ms;
}

async function embedded(settings: Partial<Record<FunctionName, FunctionSettings>>): Promise<number> {
  const root = scratch('embedded');
  const pipeline = new EmbeddedPipeline({
    root,
    runId: 'bench',
    policies: new StubPolicyProvider(),
    learnerJobs: { submit: async () => ({ jobId: 'none' }) },
    settings,
    retryAfterSec: 0,
  });
  await prepareRun(pipeline.blobs, 'bench', w);
  // Warm the run's tools and reward as the bare run does, outside the timed part.
  await warmTools(pipeline.resources, 'bench');
  pipeline.start();
  const scoredGroups = pipeline.queues.queues['scored-groups'];
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  // What the learner's first publish does: LATEST.json, whose notification wakes the feeder.
  await pipeline.blobs.put(
    keys.policyLatest('bench'),
    JSON.stringify({ version: 0, prefix: keys.policyVersion('bench', 0), sha256: '0'.repeat(64) }),
  );
  while (scoredGroups.size < w.groups) await new Promise((r) => setTimeout(r, 1));
  const ms = performance.now() - t0;
  (settings === EMBEDDED_SETTINGS ? cpu.embedded : cpu.serial).push(cpuMs(c0));
  const dead = await Promise.all(Object.values(pipeline.queues.dlqs).map((q) => q.depth()));
  await pipeline.stop();
  rmSync(root, { recursive: true, force: true });
  if (dead.some((d) => d.visible > 0)) throw new Error('messages were dead-lettered during the benchmark');
  return ms;
}

const serial = Object.fromEntries(
  (['run-starter', 'feeder', 'rollout', 'tool-call', 'reward'] as const).map((f) => [
    f,
    { maxConcurrency: 1 },
  ]),
);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const runs = { bare: [] as number[], embedded: [] as number[], serial: [] as number[] };
await bare();
await embedded(EMBEDDED_SETTINGS); // warm-up of both paths
for (let i = 0; i < Number(args.repeats); i++) {
  runs.bare.push(await bare());
  runs.embedded.push(await embedded(EMBEDDED_SETTINGS));
  runs.serial.push(await embedded(serial));
}
const per = (ms: number) => ms / trajectories;
const bareMs = median(runs.bare);
const result = {
  workload: { ...w, trajectories, turnsPerTrajectory: 2, toolCallsPerTrajectory: 1 },
  repeats: Number(args.repeats),
  bareMsPerTrajectory: per(bareMs),
  embeddedMsPerTrajectory: per(median(runs.embedded)),
  embeddedSerialMsPerTrajectory: per(median(runs.serial)),
  overheadMsPerTrajectory: per(median(runs.embedded) - bareMs),
  overheadSerialMsPerTrajectory: per(median(runs.serial) - bareMs),
  ratioEmbeddedOverBare: median(runs.embedded) / bareMs,
  cpuMsPerTrajectory: {
    bare: per(median(cpu.bare.slice(1))),
    embedded: per(median(cpu.embedded.slice(1))),
    serial: per(median(cpu.serial)),
  },
};
const f = (x: number) => x.toFixed(3);
console.log(
  `workload: ${w.groups} groups x G=${w.n} = ${trajectories} trajectories (2 turns, 1 calculator call each), ${args.repeats} repeats, medians`,
);
console.log('mode                               ms/trajectory');
console.log(`bare stage calls                   ${f(result.bareMsPerTrajectory)}`);
console.log(
  `embedded pipeline (toolrl train)   ${f(result.embeddedMsPerTrajectory)}   overhead ${f(result.overheadMsPerTrajectory)}`,
);
console.log(
  `embedded, every function serial    ${f(result.embeddedSerialMsPerTrajectory)}   overhead ${f(result.overheadSerialMsPerTrajectory)}`,
);
console.log(
  `process CPU ms/trajectory (all threads): bare ${f(result.cpuMsPerTrajectory.bare)}, embedded ${f(result.cpuMsPerTrajectory.embedded)}, serial ${f(result.cpuMsPerTrajectory.serial)}`,
);
console.log(JSON.stringify(result));

if (args.write) {
  const path = join(import.meta.dirname, '../../BENCHMARKS.md');
  const section = [
    '### Embedded',
    '',
    'Overhead per trajectory of the embedded pipeline — queues with SQS semantics (and their resume journals),',
    'the folder blob store, claim checks, zod parsing at every boundary, the handlers and the local runtime — over',
    'the bare calls of the same stage work (stubbed policy, episode logic, calculator calls, ReTool reward), in',
    `one process. Workload: ${w.groups} groups x G=${w.n} = ${trajectories} trajectories of 2 turns and 1 tool call. Aim: < 2 ms.`,
    '',
    '| mode | ms / trajectory | overhead ms / trajectory |',
    '|---|---|---|',
    `| bare stage calls | ${f(result.bareMsPerTrajectory)} | |`,
    `| embedded pipeline (toolrl train settings) | ${f(result.embeddedMsPerTrajectory)} | ${f(result.overheadMsPerTrajectory)} |`,
    `| embedded, every function at concurrency 1 | ${f(result.embeddedSerialMsPerTrajectory)} | ${f(result.overheadSerialMsPerTrajectory)} |`,
    '',
    `Process CPU per trajectory (all threads): bare ${f(result.cpuMsPerTrajectory.bare)} ms, embedded ${f(result.cpuMsPerTrajectory.embedded)} ms.`,
    '',
    'Reproduce: `npx tsx bench/pipeline/index.ts --write` (medians of 5 repeats after a warm-up; the calculator',
    "pool is grown to its num_workers before timing, as a run's pool is after its first steps).",
    '',
    '',
  ].join('\n');
  let md = '';
  try {
    md = readFileSync(path, 'utf8');
  } catch {
    md = '# Benchmarks\n\n';
  }
  // Only this subsection: `### On LocalStack` (bench/pipeline/localstack.ts) shares the Pipeline section.
  if (!md.includes('\n## Pipeline\n')) md = `${md.trimEnd()}\n\n## Pipeline\n\n`;
  const start = md.indexOf('### Embedded\n');
  if (start >= 0) {
    const ends = [md.indexOf('\n### ', start + 1), md.indexOf('\n## ', start + 1)].filter((i) => i >= 0);
    const end = ends.length ? Math.min(...ends) + 1 : md.length;
    md = md.slice(0, start) + section + md.slice(end);
  } else {
    const at = md.indexOf('\n## Pipeline\n') + '\n## Pipeline\n\n'.length;
    md = md.slice(0, at) + section + md.slice(at);
  }
  writeFileSync(path, md);
  console.log(`wrote the Pipeline section of ${path}`);
}
