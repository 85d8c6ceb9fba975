// The five pipeline stages as Lambda functions, wired from the topology: each consumes its queue, may send
// to the queues FUNCTION_SENDS lists, and reaches only the bucket keys STAGE_BUCKET_ACCESS lists.
import { join } from 'node:path';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { functionEnvSchema } from '#shared/adapters/aws/stage-context';
import { FUNCTION_ENV } from '#shared/aws/function-env';
import {
  consumedQueue,
  FUNCTION_SENDS,
  FUNCTIONS,
  type FunctionName,
  type QueueName,
} from '#shared/topology';
import { imageAssetOptions, REPO_ROOT } from '../docker-context.ts';
import { type EnvSettings, resolveFunctionSettings } from '../settings.ts';
import type { LearnerJob } from './learner-job.ts';
import { type BucketAccess, type FunctionCode, type QueuePair, ToolrlFunction } from './toolrl-function.ts';

/**
 * Key patterns each stage reads and writes (shared/topology.ts `keys` is the layout). Writes are scoped to what
 * the stage produces; reads of the pipeline's own run data are open to runs/*, except for tool-call, whose
 * process hosts the code sandbox: it reads only the run's config and inputs (tool configs) and its messages.
 */
export const STAGE_BUCKET_ACCESS: Readonly<Record<FunctionName, BucketAccess>> = {
  'run-starter': { read: ['runs/*'], write: ['runs/*/run.json'] },
  feeder: { read: ['runs/*'], write: ['runs/*/run.json', 'runs/*/feeder/*', 'runs/*/messages/*'] },
  rollout: { read: ['runs/*'], write: ['runs/*/messages/*'] },
  'tool-call': {
    read: ['runs/*/run.json', 'runs/*/input/*', 'runs/*/messages/*'],
    write: ['runs/*/messages/*'],
  },
  reward: {
    read: ['runs/*'],
    write: [
      'runs/*/trajectories/*',
      'runs/*/groups/*',
      'runs/*/groups-sent/*',
      'runs/*/metrics/eval/*',
      'runs/*/messages/*',
    ],
  },
};

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
        code: this.code(spec.packaging, join(functionsDir, spec.name, 'index.ts'), props),
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
  }

  private code(
    packaging: (typeof FUNCTIONS)[FunctionName]['packaging'],
    entry: string,
    props: StageFunctionsProps,
  ): FunctionCode {
    if (packaging === 'esbuild') return { kind: 'esbuild', entry, projectRoot: REPO_ROOT };
    const code =
      props.imageCode?.[packaging] ??
      lambda.DockerImageCode.fromImageAsset(
        REPO_ROOT,
        imageAssetOptions({ file: IMAGES[packaging], include: IMAGE_CONTEXT }),
      );
    return { kind: 'image', code, architecture: lambda.Architecture.X86_64 };
  }
}
