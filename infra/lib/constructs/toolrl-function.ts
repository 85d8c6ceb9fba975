// The house Lambda construct: fixes the defaults every stage shares (architecture, Node runtime, log group
// and retention, source maps) and offers `bind…` helpers that grant IAM and set the environment variable
// in one call, so a permission and the variable that uses it cannot drift apart.

import { Duration, RemovalPolicy, Size, Validations } from 'aws-cdk-lib';
import type * as batch from 'aws-cdk-lib/aws-batch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import type { FunctionName, QueueName } from '#shared/topology';
import { acknowledgeRunKeyPatterns } from '../nag.ts';
import type { ResolvedFunctionSettings } from '../settings.ts';

/** How the handler is packaged: bundled by esbuild on this machine, or a container image built at deploy. */
export type FunctionCode =
  | {
      readonly kind: 'esbuild';
      readonly entry: string;
      readonly projectRoot: string;
      /**
       * Files copied next to the bundle's index.mjs: data the code reads from its own folder through
       * import.meta.url (which, bundled, is the bundle's), e.g. the built-in prompt templates.
       */
      readonly files?: readonly string[];
    }
  | {
      readonly kind: 'image';
      readonly code: lambda.DockerImageCode;
      readonly architecture: lambda.Architecture;
    };

/** The pipeline's stages, and the code runner the tool-call stage invokes (it consumes no queue). */
export type ToolrlFunctionName = FunctionName | 'code-runner';

export interface ToolrlFunctionProps {
  readonly stage: ToolrlFunctionName;
  readonly code: FunctionCode;
  /** Only what the function itself is sized by; a queue consumer's batch settings go to bindQueueConsumer. */
  readonly settings: Pick<ResolvedFunctionSettings, 'memoryMb' | 'timeoutSec' | 'ephemeralStorageMb'>;
  readonly logRetention: logs.RetentionDays;
  /** The environment name, set as TOOLRL_ENV. */
  readonly envName: string;
  /** Default: `toolrl <env> <stage> stage`. */
  readonly description?: string;
  /**
   * Variables the handler's environment schema requires. Synth fails if a bind call left one unset, the
   * same check the handler makes at cold start, moved to before the deploy.
   */
  readonly requiredEnv?: readonly string[];
}

/** S3 key patterns (relative to the bucket, `*` wildcards) a function may read or write. */
export interface BucketAccess {
  readonly read?: readonly string[];
  readonly write?: readonly string[];
}

/** A queue with its dead-letter queue, as created by PipelineQueue. */
export interface QueuePair {
  readonly name: QueueName;
  readonly queue: sqs.IQueue;
  readonly deadLetterQueue: sqs.IQueue;
}

export class ToolrlFunction extends Construct {
  readonly fn: lambda.Function;
  readonly stage: ToolrlFunctionName;
  readonly logGroup: logs.LogGroup;
  private readonly env = new Set<string>();

  constructor(scope: Construct, id: string, props: ToolrlFunctionProps) {
    super(scope, id);
    this.stage = props.stage;
    const s = props.settings;
    const description = props.description ?? `toolrl ${props.envName} ${props.stage} stage`;
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    // Its own role, writing only to its own log group (instead of the managed basic-execution policy,
    // which allows every log group in the account); the bind calls add the rest.
    const role = new iam.Role(this, 'Role', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description,
    });
    this.logGroup.grantWrite(role);
    const common = {
      description,
      role,
      memorySize: s.memoryMb,
      timeout: Duration.seconds(s.timeoutSec),
      ephemeralStorageSize: Size.mebibytes(s.ephemeralStorageMb),
      logGroup: this.logGroup,
      loggingFormat: lambda.LoggingFormat.JSON,
      // rollout -> tool-calls -> rollout repeats once per turn by design (bounded by max_turns and
      // max_tool_calls); Lambda's loop detection would cut a long episode off after 16 hops.
      recursiveLoop: lambda.RecursiveLoop.ALLOW,
    } satisfies Partial<lambda.FunctionProps>;

    if (props.code.kind === 'esbuild') {
      const files = props.code.files ?? [];
      this.fn = new nodejs.NodejsFunction(this, 'Function', {
        ...common,
        entry: props.code.entry,
        projectRoot: props.code.projectRoot,
        depsLockFilePath: `${props.code.projectRoot}/package-lock.json`,
        runtime: lambda.Runtime.NODEJS_24_X,
        // No native dependency in the esbuild-packaged stages, so Graviton's lower price is free.
        architecture: lambda.Architecture.ARM_64,
        bundling: {
          format: nodejs.OutputFormat.ESM,
          // Matches the runtime above (and the nodejs:24 base of the container images).
          target: 'node24',
          mainFields: ['module', 'main'],
          sourceMap: true,
          minify: true,
          // ESM output still meets CommonJS dependencies that call require().
          banner:
            "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
          forceDockerBundling: false,
          // The SDK version the tests ran against LocalStack, not whatever the runtime ships.
          bundleAwsSDK: true,
          ...(files.length
            ? {
                commandHooks: {
                  beforeBundling: () => [],
                  beforeInstall: () => [],
                  afterBundling: (_input: string, output: string) => [
                    `cp ${files.map(shellQuote).join(' ')} ${shellQuote(output)}`,
                  ],
                },
              }
            : {}),
        },
        environment: { NODE_OPTIONS: '--enable-source-maps' },
      });
    } else {
      this.fn = new lambda.DockerImageFunction(this, 'Function', {
        ...common,
        code: props.code.code,
        architecture: props.code.architecture,
      });
    }
    this.setEnv(FUNCTION_ENV.environment, props.envName);

    const required = props.requiredEnv ?? [];
    this.node.addValidation({
      validate: () =>
        required
          .filter((name) => !this.env.has(name))
          .map(
            (name) =>
              `${props.stage}: environment variable ${name} is required by the handler but no bind… call set it`,
          ),
    });
  }

  /** Grants the listed key patterns and sets TOOLRL_BUCKET. */
  bindBucket(bucket: s3.IBucket, access: BucketAccess): this {
    const objects = (patterns: readonly string[]) => patterns.map((p) => bucket.arnForObjects(p));
    if (access.read?.length) {
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: objects(access.read) }),
      );
      // S3 answers a GET or HEAD of a missing key with 404 only to a caller allowed to list the bucket (403
      // otherwise), and the stages rely on "missing" for idempotency; a prefix condition would not count.
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn] }),
      );
    }
    if (access.write?.length)
      // Conditional writes (If-None-Match / If-Match) are PutObject too; the tagging right lets a write carry
      // the lifecycle tag (shared/deployment/lifecycle.ts) that expires trajectories and claim checks.
      this.fn.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['s3:PutObject', 's3:PutObjectTagging'],
          resources: objects(access.write),
        }),
      );
    acknowledgeRunKeyPatterns(this, bucket, [...(access.read ?? []), ...(access.write ?? [])]);
    return this.setEnv(FUNCTION_ENV.bucket, bucket.bucketName);
  }

  /** Grants SendMessage and sets the queue's URL variable. */
  bindQueueSender(pair: QueuePair): this {
    pair.queue.grantSendMessages(this.fn);
    return this.setEnv(FUNCTION_ENV.queueUrl(pair.name), pair.queue.queueUrl);
  }

  /**
   * Subscribes the function to the queue like the local runtime does (partial batch responses, batch size,
   * window and maximum concurrency from the settings), and lets it move a poison message to the
   * dead-letter queue itself, with its reason, instead of waiting for maxReceiveCount. The queue's URL is set too:
   * the handler makes a failed record visible again after a short backoff (ChangeMessageVisibility, which the event
   * source's consume grant includes) instead of the whole visibility timeout.
   */
  bindQueueConsumer(pair: QueuePair, s: ResolvedFunctionSettings): this {
    this.fn.addEventSource(
      new SqsEventSource(pair.queue, {
        batchSize: s.batchSize,
        maxBatchingWindow: s.maxBatchingWindowSec > 0 ? Duration.seconds(s.maxBatchingWindowSec) : undefined,
        maxConcurrency: s.maxConcurrency,
        reportBatchItemFailures: true,
      }),
    );
    pair.deadLetterQueue.grantSendMessages(this.fn);
    this.setEnv(FUNCTION_ENV.queueUrl(pair.name), pair.queue.queueUrl);
    return this.setEnv(FUNCTION_ENV.deadLetterQueueUrl(pair.name), pair.deadLetterQueue.queueUrl);
  }

  /** Grants read of a secret and passes its ARN as a SecretId (the handler fetches the value; it never sits in the environment). */
  bindSecret(secret: secretsmanager.ISecret, envVar: string): this {
    secret.grantRead(this.fn);
    return this.setEnv(envVar, secret.secretArn);
  }

  /**
   * Lets the function invoke the code runner (that function only, unqualified: its $LATEST) and names it in
   * TOOLRL_CODE_RUNNER_FUNCTION, which sends the code_interpreter's programs there instead of a local sandbox.
   */
  bindCodeRunner(runner: lambda.IFunction): this {
    this.fn.addToRolePolicy(
      new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: [runner.functionArn] }),
    );
    return this.setEnv(FUNCTION_ENV.codeRunnerFunction, runner.functionName);
  }

  /** Lets the function submit the learner's Batch job, and tells it which queue and definition to use. */
  bindLearnerJob(jobQueue: batch.IJobQueue, jobDefinition: batch.IJobDefinition): this {
    this.fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['batch:SubmitJob'],
        resources: [jobQueue.jobQueueArn, jobDefinition.jobDefinitionArn],
      }),
    );
    // Before submitting, the run-starter looks for the run's job (a redelivered run event must not start a
    // second learner); ListJobs takes no resource-level permission.
    this.fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['batch:ListJobs'], resources: ['*'] }));
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'batch:ListJobs supports no resource-level permission; it only reads job summaries.',
    });
    this.setEnv(FUNCTION_ENV.learnerJobQueue, jobQueue.jobQueueArn);
    return this.setEnv(FUNCTION_ENV.learnerJobDefinition, jobDefinition.jobDefinitionArn);
  }

  private setEnv(name: string, value: string): this {
    this.fn.addEnvironment(name, value);
    this.env.add(name);
    return this;
  }
}

/** A POSIX shell word for a path (the bundling hooks run in a shell). */
const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
