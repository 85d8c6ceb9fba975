// bench/pipeline on LocalStack: overhead per trajectory of the pipeline through S3 and SQS (LocalStack in host
// mode) against the embedded adapters, same workload, same handlers, settings and local runtime, same process.
// Starts LocalStack when it is not running (and stops it again at the end).
//   npx tsx bench/pipeline/localstack.ts [--groups 16] [--n 8] [--repeats 3] [--write]
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type AwsClientOptions, s3Client, sqsClient } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { RunResources } from '#shared/pipeline/run-resources';
import { createStageHandler } from '#shared/pipeline/stages/handlers';
import type { BlobStore } from '#shared/ports/blob-store';
import { silentLog } from '#shared/ports/log';
import type { Queue } from '#shared/ports/queue';
import type { StageContext } from '#shared/ports/stage-context';
import { EMBEDDED_SETTINGS, EmbeddedPipeline } from '#shared/runtime/embedded';
import { LocalRuntime } from '#shared/runtime/local-runtime';
import {
  consumedQueue,
  FUNCTION_SENDS,
  type FunctionName,
  keys,
  QUEUES,
  type QueueName,
} from '#shared/topology';
import { destroyLocalStackEnvironment } from '../../infra/lib/localstack-stack.ts';
import { CountingSqsQueue, deployBenchEnvironment, ensureLocalStack } from '../support/localstack.ts';
import {
  bareRun,
  closeSharedTools,
  prepareRun,
  scratch,
  sharedTools,
  type Workload,
  warmTools,
} from './harness.ts';
import { StubPolicyProvider } from './stub-policy.ts';

const REPO_ROOT = join(import.meta.dirname, '../..');

const { values: args } = parseArgs({
  options: {
    groups: { type: 'string', default: '16' },
    n: { type: 'string', default: '8' },
    repeats: { type: 'string', default: '3' },
    write: { type: 'boolean', default: false },
  },
});
const w: Workload = { groups: Number(args.groups), n: Number(args.n) };
const trajectories = w.groups * w.n;
const repeats = Number(args.repeats);

const runResources = (blobs: BlobStore, scratchDir: string) =>
  new RunResources(blobs, { scratchDir, buildTools: sharedTools });

/**
 * `embedded-settings`: the stages at the embedded runtime's concurrency (one rollout at a time, so every request
 * of the run waits on the one before), as the embedded figure runs; `overlapped`: the same with four rollouts
 * at a time, so requests overlap as they do under Lambda's concurrency. (The topology's own settings, 50
 * pollers per stage, swamp a LocalStack that shares two cores with them.)
 */
type LocalStackMode = 'embedded-settings' | 'overlapped';
const OVERLAPPED: typeof EMBEDDED_SETTINGS = {
  ...EMBEDDED_SETTINGS,
  rollout: { ...EMBEDDED_SETTINGS.rollout, maxConcurrency: 4 },
};

/** AWS SDK requests by command while a LocalStack run is timed (the polls of idle stages included). */
const requests = new Map<string, number>();
const lastRequests: Partial<Record<LocalStackMode, Record<string, number>>> = {};
let counting = false;
const counted = new WeakSet<object>();
function countRequests(client: S3Client | SQSClient): void {
  if (counted.has(client)) return;
  counted.add(client);
  (client as SQSClient).middlewareStack.add(
    (next, context) => async (args) => {
      const name = context.commandName ?? 'unknown';
      if (counting) requests.set(name, (requests.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'benchRequestCount' },
  );
}

/** The publish that starts the feeder: LATEST.json, whose S3 notification reaches the policy-events queue. */
async function publishV0(blobs: BlobStore, runId: string): Promise<void> {
  await blobs.put(
    keys.policyLatest(runId),
    JSON.stringify({ version: 0, prefix: keys.policyVersion(runId, 0), sha256: '0'.repeat(64) }),
  );
}

async function bare(): Promise<number> {
  const root = scratch('bare');
  const blobs = new FolderBlobStore(root);
  await prepareRun(blobs, 'bench', w);
  const resources = runResources(blobs, join(root, '.scratch'));
  await warmTools(resources, 'bench');
  await bareRun(resources, 'bench', { groups: 1, n: 1 });
  const t0 = performance.now();
  const scored = await bareRun(resources, 'bench', w);
  const ms = performance.now() - t0;
  await resources.close();
  rmSync(root, { recursive: true, force: true });
  if (scored !== trajectories) throw new Error(`bare run scored ${scored} of ${trajectories}`);
  return ms;
}

async function embedded(): Promise<number> {
  const root = scratch('embedded');
  const pipeline = new EmbeddedPipeline({
    root,
    runId: 'bench',
    policies: new StubPolicyProvider(),
    learnerJobs: { submit: async () => ({ jobId: 'none' }) },
    resources: { buildTools: sharedTools },
    retryAfterSec: 0,
  });
  await prepareRun(pipeline.blobs, 'bench', w);
  await warmTools(pipeline.resources, 'bench');
  pipeline.start();
  const scoredGroups = pipeline.queues.queues['scored-groups'];
  const t0 = performance.now();
  await publishV0(pipeline.blobs, 'bench');
  while (scoredGroups.size < w.groups) await new Promise((r) => setTimeout(r, 1));
  const ms = performance.now() - t0;
  const dead = await Promise.all(Object.values(pipeline.queues.dlqs).map((q) => q.depth()));
  await pipeline.stop();
  rmSync(root, { recursive: true, force: true });
  if (dead.some((d) => d.visible > 0)) throw new Error('messages were dead-lettered in the embedded run');
  return ms;
}

/**
 * One run through LocalStack: a fresh environment deployed from the synthesized template (bucket, queues, the S3
 * notifications), the four stages after the run-starter in this process on SqsQueue and S3BlobStore, timed from
 * the LATEST.json upload until every group's message is on the scored-groups queue.
 */
/** LocalStack's latency for one small request in series: median ms of a HeadObject and of a SendMessage. */
async function roundTrip(client: AwsClientOptions): Promise<{ headObject: number; sendMessage: number }> {
  const r = await deployBenchEnvironment(client);
  try {
    const blobs = new S3BlobStore(s3Client(client), r.bucket);
    const q = new SqsQueue(sqsClient(client), r.queueUrls.reward, 'reward');
    const time = async (op: () => Promise<unknown>) => {
      const ms: number[] = [];
      for (let i = 0; i < 200; i++) {
        const t0 = performance.now();
        await op();
        ms.push(performance.now() - t0);
      }
      return median(ms.slice(20));
    };
    return {
      headObject: await time(() => blobs.head('runs/none/run.json')),
      sendMessage: await time(() => q.send('{}')),
    };
  } finally {
    await destroyLocalStackEnvironment(r.env, client);
  }
}

async function onLocalStack(client: AwsClientOptions, mode: LocalStackMode): Promise<number> {
  const r = await deployBenchEnvironment(client);
  const root = scratch('localstack');
  const sqs = sqsClient(client);
  const s3 = s3Client(client);
  countRequests(sqs);
  countRequests(s3);
  const blobs = new S3BlobStore(s3, r.bucket);
  // The ARNs from SQS itself (event records carry them; LocalStack's path-style URLs do not parse into one).
  const arns = new Map<string, string>();
  for (const url of [...Object.values(r.queueUrls), ...Object.values(r.deadLetterQueueUrls)]) {
    const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
    arns.set(url, a.Attributes?.QueueArn ?? '');
  }
  const sqsQueue = (url: string, name: string) => new SqsQueue(sqs, url, name, arns.get(url));
  const queue = (name: QueueName) => sqsQueue(r.queueUrls[name], name);
  const resources = runResources(blobs, root);
  const policies = new StubPolicyProvider();
  const scored = new CountingSqsQueue(sqs, r.queueUrls['scored-groups'], 'scored-groups');
  const context = (fn: FunctionName): StageContext => {
    const queues: Partial<Record<QueueName, Queue>> = {};
    for (const q of FUNCTION_SENDS[fn]) queues[q] = q === 'scored-groups' ? scored : queue(q);
    const own = consumedQueue(fn);
    return {
      blobs,
      queues,
      deadLetter: sqsQueue(r.deadLetterQueueUrls[own], `${own}-dlq`),
      log: silentLog,
      now: () => new Date(),
    };
  };
  const consumed: Partial<Record<QueueName, Queue>> = {};
  for (const spec of Object.values(QUEUES))
    if (spec.consumer !== 'learner') consumed[spec.name] = queue(spec.name);
  const runtime = new LocalRuntime({
    queues: consumed,
    handlers: {
      feeder: createStageHandler('feeder', { ...context('feeder'), resources }),
      rollout: createStageHandler('rollout', { ...context('rollout'), resources, policies }),
      'tool-call': createStageHandler('tool-call', { ...context('tool-call'), resources }),
      reward: createStageHandler('reward', { ...context('reward'), resources }),
    },
    settings: mode === 'embedded-settings' ? EMBEDDED_SETTINGS : OVERLAPPED,
    waitTimeSec: 1,
    retryAfterSec: 0,
  });
  try {
    await prepareRun(blobs, 'bench', w);
    await warmTools(resources, 'bench');
    runtime.start();
    requests.clear();
    counting = true;
    const t0 = performance.now();
    await publishV0(blobs, 'bench');
    while (scored.sent < w.groups) await new Promise((res) => setTimeout(res, 1));
    const ms = performance.now() - t0;
    counting = false;
    lastRequests[mode] = Object.fromEntries([...requests].sort((a, b) => b[1] - a[1]));
    for (const q of Object.keys(QUEUES) as QueueName[]) {
      const d = await sqsQueue(r.deadLetterQueueUrls[q], `${q}-dlq`).depth();
      if (d.visible > 0) throw new Error(`messages were dead-lettered on ${q} in the LocalStack run`);
    }
    return ms;
  } finally {
    await runtime.stop();
    await resources.close();
    await policies.close();
    await destroyLocalStackEnvironment(r.env, client);
    rmSync(root, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ls = ensureLocalStack();
let latency = { headObject: Number.NaN, sendMessage: Number.NaN };
const runs = {
  bare: [] as number[],
  embedded: [] as number[],
  localstack: [] as number[],
  overlapped: [] as number[],
};
try {
  // Warm-up of every path (module loading, the tool pool, SDK connections), then the modes in turn.
  await bare();
  await embedded();
  await onLocalStack(ls.client, 'embedded-settings');
  await onLocalStack(ls.client, 'overlapped');
  latency = await roundTrip(ls.client);
  for (let i = 0; i < repeats; i++) {
    runs.bare.push(await bare());
    runs.embedded.push(await embedded());
    runs.localstack.push(await onLocalStack(ls.client, 'embedded-settings'));
    runs.overlapped.push(await onLocalStack(ls.client, 'overlapped'));
  }
} finally {
  await closeSharedTools();
  ls.stop();
}

const per = (ms: number) => ms / trajectories;
const m = {
  bare: median(runs.bare),
  embedded: median(runs.embedded),
  localstack: median(runs.localstack),
  overlapped: median(runs.overlapped),
};
const requestsPerTrajectory = (mode: LocalStackMode) =>
  Object.values(lastRequests[mode] ?? {}).reduce((a, b) => a + b, 0) / trajectories;
const result = {
  workload: { ...w, trajectories, turnsPerTrajectory: 2, toolCallsPerTrajectory: 1 },
  repeats,
  msPerTrajectory: {
    bare: per(m.bare),
    embedded: per(m.embedded),
    localstack: per(m.localstack),
    localstackOverlapped: per(m.overlapped),
  },
  /** Over the bare stage calls: what the adapters (queues, blob store, notifications) add per trajectory. */
  overheadMsPerTrajectory: {
    embedded: per(m.embedded - m.bare),
    localstack: per(m.localstack - m.bare),
    localstackOverlapped: per(m.overlapped - m.bare),
  },
  /** Same settings: LocalStack's time over the embedded adapters'. */
  ratioLocalstackOverEmbedded: m.localstack / m.embedded,
  requestsPerTrajectory: {
    localstack: requestsPerTrajectory('embedded-settings'),
    localstackOverlapped: requestsPerTrajectory('overlapped'),
  },
  requestsOfLastRun: lastRequests,
  /** LocalStack's median latency of one request in series, ms. */
  latencyMs: latency,
  raw: runs,
};
const f = (x: number) => x.toFixed(2);
const t = result.msPerTrajectory;
const o = result.overheadMsPerTrajectory;
const rq = result.requestsPerTrajectory;
const rows: [string, number, number | null, number | null][] = [
  ['bare stage calls', t.bare, null, null],
  ['embedded adapters (embedded settings)', t.embedded, o.embedded, null],
  ['LocalStack S3 + SQS (embedded settings)', t.localstack, o.localstack, rq.localstack],
  [
    'LocalStack S3 + SQS (4 rollouts at a time)',
    t.localstackOverlapped,
    o.localstackOverlapped,
    rq.localstackOverlapped,
  ],
];
console.log(
  `workload: ${w.groups} groups x G=${w.n} = ${trajectories} trajectories (2 turns, 1 calculator call each), ${repeats} repeats, medians`,
);
console.log(`${'mode'.padEnd(42)}  ms/trajectory  overhead over bare  requests/trajectory`);
for (const [name, ms, over, req] of rows)
  console.log(
    `${name.padEnd(42)}  ${f(ms).padStart(13)}  ${over === null ? ''.padStart(18) : f(over).padStart(18)}  ${req === null ? '' : req.toFixed(1).padStart(19)}`,
  );
console.log(`LocalStack / embedded, same settings: ${result.ratioLocalstackOverEmbedded.toFixed(1)}x`);
console.log(
  `LocalStack latency of one request in series: HeadObject ${f(latency.headObject)} ms, SendMessage ${f(latency.sendMessage)} ms`,
);
console.log(JSON.stringify(result));

if (args.write) {
  const path = join(REPO_ROOT, 'BENCHMARKS.md');
  const byCommand = (mode: LocalStackMode) =>
    Object.entries(lastRequests[mode] ?? {})
      .map(([c, n]) => `${c.replace(/Command$/, '')} ${(n / trajectories).toFixed(1)}`)
      .join(', ');
  const sub = [
    '### On LocalStack',
    '',
    'The same workload through S3 and SQS on LocalStack 4.14.0 (host mode, 127.0.0.1), against the embedded',
    'adapters and the bare stage calls in the same script: the feeder, rollout, tool-call and reward handlers run',
    "by the local runtime in one process on `SqsQueue` and `S3BlobStore`, started by the LATEST.json upload's real",
    'S3 notification and timed until the reward stage has sent every group to the scored-groups queue. Policy',
    'stubbed; one calculator pool, grown before timing, serves every mode (a fresh pool per run would time mathjs',
    `worker start-ups). Workload: ${w.groups} groups x G=${w.n} = ${trajectories} trajectories of 2 turns and 1 tool call; medians of ${repeats} repeats.`,
    'Aim: < 30 ms per trajectory on LocalStack.',
    '',
    '| mode | ms / trajectory | overhead over bare, ms / trajectory | S3 + SQS requests / trajectory |',
    '|---|---|---|---|',
    ...rows.map(
      ([name, ms, over, req]) =>
        `| ${name} | ${f(ms)} | ${over === null ? '' : f(over)} | ${req === null ? '' : req.toFixed(1)} |`,
    ),
    '',
    `At the same settings (one rollout at a time, so the requests run in series) LocalStack takes ${result.ratioLocalstackOverEmbedded.toFixed(1)}x the`,
    "embedded adapters' time: the figure is about the requests per trajectory times LocalStack's latency per request",
    `(measured in the same script: HeadObject ${f(latency.headObject)} ms, SendMessage ${f(latency.sendMessage)} ms, medians of 180 in series).`,
    `Requests per trajectory by command, embedded settings: ${byCommand('embedded-settings')}.`,
    ...(o.localstack > 30
      ? [
          'Above the aim here: see which commands dominate above; each request costs about the latency measured.',
        ]
      : []),
    'Most requests are the queues: one receive, one delete and one send per stage a trajectory passes through',
    '(rollout handles one record per invocation). The blob store does a put and a listing per trajectory (the reward',
    "stage stores it, then looks whether its group is complete) and reads a trajectory back once, for the group's",
    'manifest; the already-scored checks run only on redelivered messages.',
    '',
    'Reproduce: `npx tsx bench/pipeline/localstack.ts --write` (starts and stops LocalStack when it is not running).',
    '',
    '',
  ].join('\n');
  let md = readFileSync(path, 'utf8');
  if (!md.includes('\n## Pipeline')) md = `${md.trimEnd()}\n\n## Pipeline\n\n`;
  const start = md.indexOf('\n## Pipeline') + 1;
  const next = md.indexOf('\n## ', start);
  const sectionEnd = next < 0 ? md.length : next + 1;
  const at = md.indexOf('### On LocalStack', start);
  if (at >= 0 && at < sectionEnd) {
    // Replace our sub-section only, up to the next heading of level 2 or 3.
    const after = md.slice(at + 1, sectionEnd).search(/\n#{2,3} /);
    const end = after < 0 ? sectionEnd : at + 1 + after + 1;
    md = md.slice(0, at) + sub + md.slice(end);
  } else {
    // Append it at the end of the Pipeline section (after the embedded figure, when there is one).
    const head = md.slice(0, sectionEnd).trimEnd();
    const rest = md.slice(sectionEnd);
    md = `${head}\n\n${sub}${rest ? `\n${rest}` : ''}`;
  }
  writeFileSync(path, md);
  console.log(`wrote "### On LocalStack" in the Pipeline section of ${path}`);
}
