// The one declaration of the pipeline's topology: queues, their consumers, timeouts, dead-letter
// settings, batch sizes, bucket prefixes and notifications. The CDK stacks (deployed to AWS, or to LocalStack
// as a template) and the embedded runtime both read this, so they cannot drift.
import { fill, folderOf, templatePattern } from '#shared/templates';

/**
 * The Lambda-style stages (each has a handler in functions/<name>/index.ts), the one list of them. A stage added
 * here is named by the compiler everywhere it needs an entry (FUNCTIONS, its queue, FUNCTION_SENDS, its handler in
 * shared/pipeline/stages/handlers.ts, its embedded context and settings); the dead-letter stages, the local worker's
 * list and the CDK functions are read from FUNCTIONS.
 */
export type FunctionName = 'run-starter' | 'feeder' | 'rollout' | 'tool-call' | 'reward';

export interface FunctionSpec {
  readonly name: FunctionName;
  /** Lambda timeout; the consumed queue's visibility timeout is at least 6x this (AWS guidance). */
  readonly timeoutSec: number;
  readonly memoryMb: number;
  /**
   * How it is packaged on AWS: bundled by esbuild, or a container image (`container-tool-call`: the image with
   * Python, the code sandbox and bfcl-eval, run with the function's own command).
   */
  readonly packaging: 'esbuild' | 'container-rollout' | 'container-tool-call';
  /** Its messages are about one group (a rollout, a tool call, a reward): one it dead-letters is that group's drop. */
  readonly groupMessages: boolean;
}

export type QueueName =
  | 'run-events'
  | 'policy-events'
  | 'rollout'
  | 'tool-calls'
  | 'reward'
  | 'scored-groups';

export interface QueueSpec {
  readonly name: QueueName;
  /** The function that consumes it, or `learner` for the GPU job. */
  readonly consumer: FunctionName | 'learner';
  readonly visibilityTimeoutSec: number;
  readonly maxReceiveCount: number;
  /** Event source mapping settings (ignored for the learner). */
  readonly batchSize: number;
  readonly maxBatchingWindowSec: number;
  /** Default maximum concurrency of the consumer (per-environment settings may override). */
  readonly maxConcurrency: number;
  readonly retentionSec: number;
}

export const FUNCTIONS = {
  'run-starter': {
    name: 'run-starter',
    timeoutSec: 300,
    memoryMb: 1024,
    packaging: 'esbuild',
    groupMessages: false,
  },
  feeder: { name: 'feeder', timeoutSec: 120, memoryMb: 512, packaging: 'esbuild', groupMessages: false },
  rollout: {
    name: 'rollout',
    timeoutSec: 900,
    memoryMb: 6144,
    packaging: 'container-rollout',
    groupMessages: true,
  },
  'tool-call': {
    name: 'tool-call',
    timeoutSec: 300,
    memoryMb: 2048,
    packaging: 'container-tool-call',
    groupMessages: true,
  },
  // The `bfcl` reward runs BFCL's checker in Python: the tool-call image has it.
  reward: {
    name: 'reward',
    timeoutSec: 120,
    memoryMb: 1024,
    packaging: 'container-tool-call',
    groupMessages: true,
  },
} as const satisfies Readonly<Record<FunctionName, FunctionSpec>>;

/** Every stage, in the pipeline's order. */
export const FUNCTION_NAMES = Object.keys(FUNCTIONS) as FunctionName[];

/** The stages whose messages are about one group: where a group's dead letter comes from, besides the learner. */
export type GroupStage = {
  [F in FunctionName]: (typeof FUNCTIONS)[F]['groupMessages'] extends true ? F : never;
}[FunctionName];
export const GROUP_STAGES = FUNCTION_NAMES.filter((fn) => FUNCTIONS[fn].groupMessages) as GroupStage[];

const DAY = 86_400;
const queue = (
  name: QueueName,
  consumer: FunctionName | 'learner',
  opts: { batchSize: number; windowSec: number; maxConcurrency: number; visibilityTimeoutSec?: number },
): QueueSpec => ({
  name,
  consumer,
  visibilityTimeoutSec: opts.visibilityTimeoutSec ?? 6 * FUNCTIONS[consumer as FunctionName].timeoutSec,
  maxReceiveCount: 5,
  batchSize: opts.batchSize,
  maxBatchingWindowSec: opts.windowSec,
  maxConcurrency: opts.maxConcurrency,
  retentionSec: 4 * DAY,
});

export const QUEUES: Readonly<Record<QueueName, QueueSpec>> = {
  'run-events': queue('run-events', 'run-starter', { batchSize: 1, windowSec: 0, maxConcurrency: 2 }),
  'policy-events': queue('policy-events', 'feeder', { batchSize: 1, windowSec: 0, maxConcurrency: 2 }),
  rollout: queue('rollout', 'rollout', { batchSize: 1, windowSec: 0, maxConcurrency: 50 }),
  'tool-calls': queue('tool-calls', 'tool-call', { batchSize: 10, windowSec: 1, maxConcurrency: 50 }),
  reward: queue('reward', 'reward', { batchSize: 10, windowSec: 1, maxConcurrency: 20 }),
  // The learner extends visibility while a step runs; this is its initial lease.
  'scored-groups': queue('scored-groups', 'learner', {
    batchSize: 10,
    windowSec: 0,
    maxConcurrency: 1,
    visibilityTimeoutSec: 900,
  }),
};

/** SQS's hard limit is 1 MiB; payloads above this go to the blob store and the message carries the key. */
export const CLAIM_CHECK_THRESHOLD_BYTES = 200 * 1024;

/** Dead-letter queue name of a queue. */
export const dlqName = (q: QueueName): string => `${q}-dlq`;

/** Physical queue name in an environment (`toolrl-dev-rollout`). */
export const physicalQueueName = (env: string, q: QueueName | string): string => `toolrl-${env}-${q}`;

/**
 * The bucket's layout (see ARCHITECTURE.md, "Storage layout") as `{name}` templates: the one definition for both
 * languages (`npm run schemas:generate` writes them to shared/schemas/json/constants.json for the learner).
 */
export const KEY_TEMPLATES = {
  runPrefix: 'runs/{runId}/',
  config: 'runs/{runId}/input/config.yaml',
  inputPrefix: 'runs/{runId}/input/',
  runJson: 'runs/{runId}/run.json',
  policyVersion: 'runs/{runId}/policy/v{version}/',
  policyLatest: 'runs/{runId}/policy/LATEST.json',
  trajectory: 'runs/{runId}/trajectories/{groupId}/{sampleIndex}.json',
  trajectoryPrefix: 'runs/{runId}/trajectories/{groupId}/',
  group: 'runs/{runId}/groups/{groupId}.json',
  /** Written after a group's message was sent: the writer's redelivery then knows it need not re-send. */
  groupSent: 'runs/{runId}/groups-sent/{groupId}',
  checkpointsPrefix: 'runs/{runId}/checkpoints/',
  checkpoint: 'runs/{runId}/checkpoints/step-{step}/',
  /** New weights at a step that already has a complete checkpoint go beside it, so the complete one is never
   * taken apart before its replacement lands (written by the learner). */
  checkpointRevision: 'runs/{runId}/checkpoints/step-{step}-r{revision}/',
  metrics: 'runs/{runId}/metrics/',
  /** Validation summary of one policy version (written once, when all its validation groups are scored). */
  evalSummary: 'runs/{runId}/metrics/eval/v{version}.json',
  claimCheck: 'runs/{runId}/messages/{id}.json',
  /** Written by the learner after every committed step (LearnerStateSchema). */
  learnerState: 'runs/{runId}/learner/state.json',
  /** The feeder's position in the run's walk over stages, epochs and prompts. */
  feederState: 'runs/{runId}/feeder/state.json',
  /** Records of the run's dead-lettered group messages (DeadLetterRecordSchema), one folder per group. */
  deadLetters: 'runs/{runId}/dead-letters/',
  /** `{messageId}` with every character outside [A-Za-z0-9_-] replaced by `_` (both languages do). */
  deadLetter: 'runs/{runId}/dead-letters/{groupId}/{stage}-{messageId}.json',
  /** Dead-letter records whose messages `toolrl redrive` sent back (RedrivenRecordSchema): history, not drops. */
  redriven: 'runs/{runId}/redriven/',
  redrivenRecord: 'runs/{runId}/redriven/{groupId}/{stage}-{messageId}.json',
  /** Embedded runs: `toolrl redrive` asks the `toolrl train` process that holds the run's queues through here. */
  redriveRequests: 'runs/{runId}/redrive-requests/',
  /** The learner lease: taken (put-if-absent) before the learner job is submitted, so a run has one learner. */
  learnerLease: 'runs/{runId}/learner/lease.json',
  /** The learner's SFT warm-start progress (LearnerWarmStartSchema), rewritten while it runs. */
  learnerWarmStart: 'runs/{runId}/learner/warm-start.json',
  /** One process's counts of the run's messages per queue (QueueTallySchema): `toolrl status` sums them. */
  queueTally: 'runs/{runId}/queue-tally/{writer}.json',
} as const;

const K = KEY_TEMPLATES;

/** The keys of `KEY_TEMPLATES`, filled. */
export const keys = {
  runPrefix: (runId: string) => fill(K.runPrefix, { runId }),
  config: (runId: string) => fill(K.config, { runId }),
  inputPrefix: (runId: string) => fill(K.inputPrefix, { runId }),
  runJson: (runId: string) => fill(K.runJson, { runId }),
  policyVersion: (runId: string, version: number) => fill(K.policyVersion, { runId, version }),
  policyLatest: (runId: string) => fill(K.policyLatest, { runId }),
  trajectory: (runId: string, groupId: string, sampleIndex: number) =>
    fill(K.trajectory, { runId, groupId, sampleIndex }),
  trajectoryPrefix: (runId: string, groupId: string) => fill(K.trajectoryPrefix, { runId, groupId }),
  group: (runId: string, groupId: string) => fill(K.group, { runId, groupId }),
  /** The folder of the run's group manifests. */
  groups: (runId: string) => fill(folderOf(K.group, 'groupId'), { runId }),
  groupSent: (runId: string, groupId: string) => fill(K.groupSent, { runId, groupId }),
  checkpoint: (runId: string, step: number) => fill(K.checkpoint, { runId, step }),
  metrics: (runId: string) => fill(K.metrics, { runId }),
  claimCheck: (runId: string, id: string) => fill(K.claimCheck, { runId, id }),
  learnerState: (runId: string) => fill(K.learnerState, { runId }),
  feederState: (runId: string) => fill(K.feederState, { runId }),
  evalSummary: (runId: string, version: number) => fill(K.evalSummary, { runId, version }),
  /** The folder of the run's validation summaries. */
  evalSummaries: (runId: string) => fill(folderOf(K.evalSummary, 'version'), { runId }),
  deadLetters: (runId: string) => fill(K.deadLetters, { runId }),
  deadLetter: (runId: string, groupId: string, stage: string, messageId: string) =>
    fill(K.deadLetter, { runId, groupId, stage, messageId: messageId.replace(/[^A-Za-z0-9_-]/g, '_') }),
  redriven: (runId: string) => fill(K.redriven, { runId }),
  redrivenRecord: (runId: string, groupId: string, stage: string, messageId: string) =>
    fill(K.redrivenRecord, { runId, groupId, stage, messageId: messageId.replace(/[^A-Za-z0-9_-]/g, '_') }),
  redriveRequests: (runId: string) => fill(K.redriveRequests, { runId }),
  learnerLease: (runId: string) => fill(K.learnerLease, { runId }),
  learnerWarmStart: (runId: string) => fill(K.learnerWarmStart, { runId }),
  queueTally: (runId: string, writer: string) => fill(K.queueTally, { runId, writer }),
  /** The folder of the run's queue tallies. */
  queueTallies: (runId: string) => fill(folderOf(K.queueTally, 'writer'), { runId }),
} as const;

const KEY_PATTERNS = new Map<string, RegExp>();

/** The placeholders' values of a key `KEY_TEMPLATES[name]` makes; undefined for any other key. */
export function parseKey(name: keyof typeof KEY_TEMPLATES, key: string): Record<string, string> | undefined {
  const p = KEY_PATTERNS.get(name) ?? templatePattern(K[name]);
  KEY_PATTERNS.set(name, p);
  return p.exec(key)?.groups;
}

/** Which queues each function sends to (besides its own queue's dead-letter queue): what CDK grants and binds. */
export const FUNCTION_SENDS: Readonly<Record<FunctionName, readonly QueueName[]>> = {
  // Its own queue: the delayed looks at a run's inputs while it waits for them.
  'run-starter': ['run-events'],
  feeder: ['rollout'],
  rollout: ['tool-calls', 'reward'],
  'tool-call': ['rollout'],
  reward: ['scored-groups'],
};

/** The queue a function consumes. */
export const consumedQueue = (fn: FunctionName): QueueName =>
  (Object.values(QUEUES).find((q) => q.consumer === fn) as QueueSpec).name;

/** Where every run's keys are (`runs/`): a notification's prefix cannot hold the run id. */
const RUNS = folderOf(K.runPrefix, 'runId');
/** A run's key below its folder (`policy/LATEST.json`): the notification suffix that stands for it. */
function inRun(template: string): string {
  const rest = template.slice(K.runPrefix.length);
  if (!template.startsWith(K.runPrefix) || rest.includes('{'))
    throw new Error(`${template} is not one fixed key below ${K.runPrefix}`);
  return rest;
}

/**
 * S3 notifications: which object keys go to which queue. Suffixes differ, so the rules never overlap, and none
 * matches a file the pipeline writes but the policy pointer and the learner's state (a filter has one prefix, which
 * cannot hold the run id, and one suffix): no notification that wakes a stage to do nothing.
 */
export const NOTIFICATIONS: readonly { queue: QueueName; prefix: string; suffix: string }[] = [
  { queue: 'run-events', prefix: RUNS, suffix: '.parquet' },
  // The run's config: the run-starter checks it at once and then looks at the inputs until every dataset it names
  // is there or they have waited too long (pipeline/stages/input-check.ts). So a JSON Lines or `.json` dataset
  // uploaded by hand starts the run at the next look: a `.jsonl` rule would also fire on the learner's
  // metrics.jsonl and batches.jsonl at every step, and a `.json` one would overlap the two rules below.
  { queue: 'run-events', prefix: RUNS, suffix: inRun(K.config) },
  { queue: 'policy-events', prefix: RUNS, suffix: inRun(K.policyLatest) },
  // Each committed learner step also wakes the feeder, so flow control never waits on the next publish
  // (publish_every > 1) and the run is marked complete as soon as the learner says done.
  { queue: 'policy-events', prefix: RUNS, suffix: inRun(K.learnerState) },
];
