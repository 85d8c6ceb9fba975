// The five pipeline stages as Lambda functions, wired from the topology: each consumes its queue, may send
// to the queues FUNCTION_SENDS lists, and reaches only the bucket keys STAGE_BUCKET_ACCESS lists. Beside them, the
// code runner: the function the tool-call stage invokes to run the model's code, permitted nothing but its logs.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { functionEnvSchema } from '#shared/adapters/aws/stage-context';
import { BUILTIN_PROMPTS_DIR } from '#shared/data/prompts/templates';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { folderOf, keyWildcard } from '#shared/templates';
import {
  consumedQueue,
  FUNCTION_SENDS,
  FUNCTIONS,
  type FunctionName,
  KEY_TEMPLATES,
  type QueueName,
} from '#shared/topology';
import { imageAssetOptions, REPO_ROOT } from '../docker-context.ts';
import { type EnvSettings, resolveFunctionSettings } from '../settings.ts';
import type { LearnerJob } from './learner-job.ts';
import { type BucketAccess, type FunctionCode, type QueuePair, ToolrlFunction } from './toolrl-function.ts';

/** IAM patterns of the key layout (shared/topology.ts KEY_TEMPLATES), so a grant follows a change of a template. */
const K = KEY_TEMPLATES;
const ALL_RUNS = keyWildcard(folderOf(K.runPrefix, 'runId')); // runs/*
const RUN_JSON = keyWildcard(K.runJson);
const FEEDER = keyWildcard(folderOf(K.feederState));
const MESSAGES = keyWildcard(folderOf(K.claimCheck, 'id'));
const INPUTS = keyWildcard(K.inputPrefix);
const TRAJECTORIES = keyWildcard(folderOf(K.trajectory, 'groupId'));
const GROUPS = keyWildcard(folderOf(K.group, 'groupId'));
const GROUPS_SENT = keyWildcard(folderOf(K.groupSent, 'groupId'));
const EVAL_SUMMARIES = keyWildcard(folderOf(K.evalSummary, 'version'));
const DEAD_LETTERS = keyWildcard(K.deadLetters);
const LEARNER_LEASE = keyWildcard(K.learnerLease);
const LEARNER_STATE = keyWildcard(K.learnerState);
const FEEDER_STATE = keyWildcard(K.feederState);
const QUEUE_TALLY = keyWildcard(folderOf(K.queueTally, 'writer'));

/**
 * What a stage that dead-letters a group's message writes (pipeline/dead-letters.ts): the record, and what the
 * drop can settle: the run's failure past its dead-letter limit or, for a validation group, the version's
 * summary and the run's completion (run.json).
 */
const DEAD_LETTERING = [DEAD_LETTERS, EVAL_SUMMARIES, RUN_JSON];

/**
 * Key patterns each stage reads and writes. Writes are scoped to what the stage produces; reads of the
 * pipeline's own run data are open to runs/*, except for tool-call, which runs tools on model-written arguments
 * (its code runs in the code runner on AWS, but the narrower grant stays): it reads the run's config and inputs
 * (tool configs) and its messages, and what dead-lettering reads (the run's records, the validation groups'
 * manifests and what completing the run checks: learner and feeder state, summaries).
 */
export const STAGE_BUCKET_ACCESS: Readonly<Record<FunctionName, BucketAccess>> = {
  'run-starter': { read: [ALL_RUNS], write: [RUN_JSON, LEARNER_LEASE, QUEUE_TALLY] },
  feeder: { read: [ALL_RUNS], write: [RUN_JSON, FEEDER, MESSAGES, QUEUE_TALLY] },
  rollout: { read: [ALL_RUNS], write: [MESSAGES, ...DEAD_LETTERING, QUEUE_TALLY] },
  'tool-call': {
    read: [RUN_JSON, INPUTS, MESSAGES, DEAD_LETTERS, GROUPS, LEARNER_STATE, FEEDER_STATE, EVAL_SUMMARIES],
    write: [MESSAGES, ...DEAD_LETTERING, QUEUE_TALLY],
  },
  reward: {
    read: [ALL_RUNS],
    write: [TRAJECTORIES, GROUPS, GROUPS_SENT, MESSAGES, ...DEAD_LETTERING, QUEUE_TALLY],
  },
};

/**
 * The built-in prompt templates (`data.prompt_type: toolcall`), shipped next to every esbuild bundle's index.mjs:
 * the loader looks for them in its own folder, which in a bundle is the bundle's (the feeder applies them; the
 * other bundles get the few KB too, so a stage that starts using them cannot find them missing on AWS only).
 */
const BUILTIN_PROMPT_FILES = readdirSync(BUILTIN_PROMPTS_DIR)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => join(BUILTIN_PROMPTS_DIR, f));

/**
 * The code runner's size. Its timeout matches the tool-call stage's, the longest a call could wait on it; the
 * handler ends the program's wall clock before it. Memory leaves room for the sandbox's default 1 GiB address
 * space limit beside Node (and buys CPU: Lambda gives a full vCPU at 1769 MB).
 */
export const CODE_RUNNER_SETTINGS = { timeoutSec: 300, memoryMb: 2048, ephemeralStorageMb: 512 } as const;

/** Dockerfiles of the container stages and what their build needs from the repository. */
const IMAGES = {
  'container-rollout': 'infra/docker/rollout/Dockerfile',
  'container-tool-call': 'infra/docker/tool-call/Dockerfile',
} as const;
const IMAGE_CONTEXT = ['package.json', 'package-lock.json', '.npmrc', 'shared', 'functions', 'infra/docker'];

export interface StageFunctionsProps {
  readonly envName: string;
  readonly settings: EnvSettings;
  readonly logRetention: logs.RetentionDays;
  readonly bucket: s3.IBucket;
  readonly queues: Readonly<Record<QueueName, QueuePair>>;
  readonly toolApiKeys: secretsmanager.ISecret;
  readonly learner: LearnerJob;
  /** Folder with `<stage>/index.ts` handlers (default: the repository's functions/). */
  readonly functionsDir?: string;
  /** Replaces the container stages' code (tests: avoids staging the Docker build context). */
  readonly imageCode?: Partial<Record<'container-rollout' | 'container-tool-call', lambda.DockerImageCode>>;
}

export class StageFunctions extends Construct {
  readonly stages: Readonly<Record<FunctionName, ToolrlFunction>>;
  /** Runs the code_interpreter's programs for the tool-call stage; its role may only write its own logs. */
  readonly codeRunner: ToolrlFunction;

  constructor(scope: Construct, id: string, props: StageFunctionsProps) {
    super(scope, id);
    const functionsDir = props.functionsDir ?? join(REPO_ROOT, 'functions');
    const stages = {} as Record<FunctionName, ToolrlFunction>;
    for (const spec of Object.values(FUNCTIONS)) {
      const settings = resolveFunctionSettings(props.envName, props.settings, spec.name);
      const consumed = consumedQueue(spec.name);
      const sends = FUNCTION_SENDS[spec.name];
      const fn = new ToolrlFunction(this, spec.name, {
        stage: spec.name,
        code: this.code(spec.packaging, spec.name, functionsDir, props),
        settings,
        logRetention: props.logRetention,
        envName: props.envName,
        // The handler's own environment schema: what it parses at cold start, synth checks now.
        requiredEnv: Object.keys(functionEnvSchema(spec.name).shape),
      });
      fn.bindQueueConsumer(props.queues[consumed], settings).bindBucket(
        props.bucket,
        STAGE_BUCKET_ACCESS[spec.name],
      );
      for (const q of sends) fn.bindQueueSender(props.queues[q]);
      stages[spec.name] = fn;
    }
    stages['run-starter'].bindLearnerJob(props.learner.jobQueue, props.learner.jobDefinition);
    stages['tool-call'].bindSecret(props.toolApiKeys, FUNCTION_ENV.toolSecretsId);
    this.stages = stages;

    // On Lambda the sandbox cannot take the program to another uid or namespace, so whatever process runs it can be
    // read by it (/proc/<pid>/environ holds the role's credentials). Here that process is this function's own, whose
    // role has nothing beyond its log group: no bind call, and none of the stages' resources in its environment.
    this.codeRunner = new ToolrlFunction(this, 'code-runner', {
      stage: 'code-runner',
      description: `toolrl ${props.envName} code-runner: runs code_interpreter programs; its role may only write its logs`,
      code: this.code('container-tool-call', 'code-runner', functionsDir, props),
      settings: CODE_RUNNER_SETTINGS,
      logRetention: props.logRetention,
      envName: props.envName,
    });
    stages['tool-call'].bindCodeRunner(this.codeRunner.fn);
  }

  /** Esbuild bundles `<functionsDir>/<name>/index.ts`; an image runs it by the command `<name>.handler`. */
  private code(
    packaging: (typeof FUNCTIONS)[FunctionName]['packaging'],
    name: string,
    functionsDir: string,
    props: StageFunctionsProps,
  ): FunctionCode {
    if (packaging === 'esbuild')
      return {
        kind: 'esbuild',
        entry: join(functionsDir, name, 'index.ts'),
        projectRoot: REPO_ROOT,
        files: BUILTIN_PROMPT_FILES,
      };
    // One image serves several functions: the command names the function's copy of the entry module
    // (infra/docker/lambda-handler.mjs), and identical build contexts make one asset, built once.
    const code =
      props.imageCode?.[packaging] ??
      lambda.DockerImageCode.fromImageAsset(REPO_ROOT, {
        ...imageAssetOptions({ file: IMAGES[packaging], include: IMAGE_CONTEXT }),
        cmd: [`${name}.handler`],
      });
    return { kind: 'image', code, architecture: lambda.Architecture.X86_64 };
  }
}
