// The GPU learner on AWS Batch: a managed EC2 compute environment of GPU instances (spot optional), a job
// queue, and a job definition built from gpu-worker/Dockerfile. run-starter submits one job per run.
// Shapes: one GPU (dev: g5/g6), one instance with `gpus` GPUs (prod: 8 on p4d/p5; torchrun starts one FSDP2
// rank per GPU), or `nodes` instances as a multi-node parallel job (torchrun on each, rendezvous on the main).

import { Duration, RemovalPolicy, Size, Validations } from 'aws-cdk-lib';
import * as batch from 'aws-cdk-lib/aws-batch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { learnerJobDefinitionName, learnerJobQueueName } from '#shared/deployment/names';
import { folderOf, keyWildcard } from '#shared/templates';
import { KEY_TEMPLATES } from '#shared/topology';
import { imageAssetOptions, REPO_ROOT } from '../docker-context.ts';
import { acknowledgeRunKeyPatterns } from '../nag.ts';
import type { EnvSettings } from '../settings.ts';
import { LearnerNetwork } from './learner-network.ts';
import type { QueuePair } from './toolrl-function.ts';

export interface LearnerJobProps {
  readonly envName: string;
  readonly settings: EnvSettings['learner'];
  readonly logRetention: logs.RetentionDays;
  readonly bucket: s3.IBucket;
  readonly scoredGroups: QueuePair;
  readonly wandbSecret: secretsmanager.ISecret;
  /** Overrides the image (tests use a registry image so they need not stage the build context). */
  readonly image?: ecs.ContainerImage;
}

/** Batch's job parameter carrying the run id (`Ref::runId` in the command); run-starter sets it on submit. */
export const RUN_ID_PARAMETER = 'runId';

export class LearnerJob extends Construct {
  readonly jobQueue: batch.JobQueue;
  readonly jobDefinition: batch.EcsJobDefinition | batch.MultiNodeJobDefinition;
  readonly logGroup: logs.LogGroup;
  readonly role: iam.Role;

  constructor(scope: Construct, id: string, props: LearnerJobProps) {
    super(scope, id);
    const s = props.settings;
    const multiNode = s.nodes > 1;
    const network = new LearnerNetwork(this, 'Network', {
      natGateways: s.natGateways,
      logRetention: props.logRetention,
      multiNode,
    });

    const compute = new batch.ManagedEc2EcsComputeEnvironment(this, 'Gpu', {
      vpc: network.vpc,
      vpcSubnets: network.subnets,
      securityGroups: [network.securityGroup],
      instanceTypes: s.instanceTypes.map((t) => new ec2.InstanceType(t)),
      useOptimalInstanceClasses: false,
      images: [{ imageType: batch.EcsMachineImageType.ECS_AL2023_NVIDIA }],
      spot: s.spot,
      allocationStrategy: s.spot
        ? batch.AllocationStrategy.SPOT_PRICE_CAPACITY_OPTIMIZED
        : batch.AllocationStrategy.BEST_FIT_PROGRESSIVE,
      minvCpus: s.minvCpus,
      maxvCpus: s.maxvCpus,
      // AWS Batch: a multi-node job's instances in one cluster placement group (one AZ, low-latency network).
      ...(multiNode
        ? {
            placementGroup: new ec2.PlacementGroup(this, 'Placement', {
              strategy: ec2.PlacementGroupStrategy.CLUSTER,
            }),
          }
        : {}),
      launchTemplate: new ec2.LaunchTemplate(this, 'Hosts', {
        requireImdsv2: true,
        // The CUDA image and checkpoints outgrow the AMI's 30 GiB root volume.
        blockDevices: [
          {
            deviceName: '/dev/xvda',
            volume: ec2.BlockDeviceVolume.ebs(200, {
              encrypted: true,
              volumeType: ec2.EbsDeviceVolumeType.GP3,
            }),
          },
        ],
      }),
    });

    Validations.of(compute).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonEC2ContainerServiceforEC2Role]',
      reason:
        'The ECS agent on Batch hosts needs exactly this AWS-maintained policy to register and run containers.',
    });

    this.jobQueue = new batch.JobQueue(this, 'Queue', {
      jobQueueName: learnerJobQueueName(props.envName),
      computeEnvironments: [{ computeEnvironment: compute, order: 1 }],
    });

    this.role = new iam.Role(this, 'JobRole', {
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com'),
      description: 'toolrl learner: its run prefix in the bucket and the scored-groups queue',
    });
    this.grantRuns(props.bucket);
    props.scoredGroups.queue.grantConsumeMessages(this.role);
    // Runs share the queue: another run's message is forwarded to its learner as a new message (drivers/sqs.py).
    props.scoredGroups.queue.grantSendMessages(this.role);
    // A scored group that fails validation goes to the dead-letter queue with its reason.
    props.scoredGroups.deadLetterQueue.grantSendMessages(this.role);

    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    const image =
      props.image ??
      ecs.ContainerImage.fromAsset(
        REPO_ROOT,
        imageAssetOptions({
          file: 'gpu-worker/Dockerfile',
          // What the Dockerfile copies.
          include: [
            'gpu-worker/Dockerfile',
            'gpu-worker/requirements.lock',
            'gpu-worker/pyproject.toml',
            'gpu-worker/toolrl_learner',
            'shared/schemas/json',
          ],
        }),
      );

    const container = new batch.EcsEc2ContainerDefinition(this, 'Container', {
      image,
      cpu: s.vcpus,
      memory: Size.mebibytes(s.memoryMib),
      gpu: s.gpus,
      // The image's entrypoint is `python -m toolrl_learner`; this replaces only its CMD. More than one GPU (or
      // node): torchrun with one rank per GPU (on Batch's multi-node jobs, launch reads the node index and the
      // main node's address from AWS_BATCH_JOB_*).
      command: [
        ...(s.gpus > 1 || multiNode ? ['launch', `--nproc-per-node=${s.gpus}`] : []),
        'sqs',
        '--run-id',
        `Ref::${RUN_ID_PARAMETER}`,
      ],
      environment: {
        [FUNCTION_ENV.bucket]: props.bucket.bucketName,
        [FUNCTION_ENV.queueUrl('scored-groups')]: props.scoredGroups.queue.queueUrl,
        [FUNCTION_ENV.deadLetterQueueUrl('scored-groups')]: props.scoredGroups.deadLetterQueue.queueUrl,
        [FUNCTION_ENV.environment]: props.envName,
      },
      // Injected by the ECS agent from Secrets Manager at start; empty until the operator puts a key.
      secrets: { WANDB_API_KEY: batch.Secret.fromSecretsManager(props.wandbSecret, 'WANDB_API_KEY') },
      jobRole: this.role,
      // A larger /dev/shm than Docker's 64 MiB default: with gpus > 1 NCCL moves tensors between the ranks of one
      // instance through shared memory (where the GPUs have no peer-to-peer path, and for its own bookkeeping); one
      // process on one GPU does not need it (checkpoints are staged under the workdir in /tmp).
      linuxParameters: new batch.LinuxParameters(this, 'Linux', {
        sharedMemorySize: Size.mebibytes(Math.floor(s.memoryMib / 4)),
      }),
      logging: ecs.LogDriver.awsLogs({ streamPrefix: 'learner', logGroup: this.logGroup }),
    });
    Validations.of(container.executionRole).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ecr:GetAuthorizationToken (to pull the learner image) supports no resource-level permission.',
    });

    const jobProps = {
      jobDefinitionName: learnerJobDefinitionName(props.envName),
      parameters: { [RUN_ID_PARAMETER]: 'unset' },
      retryAttempts: s.attempts,
      // Batch takes the first strategy that matches: a host that went away (spot reclaim, lost instance) or an
      // image pull that failed is retried, and the learner resumes from its last complete checkpoint; any
      // other exit (a code error, OOM) stops, since retrying would only repeat it.
      retryStrategies: [
        batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.SPOT_INSTANCE_RECLAIMED),
        // 143: checkpointed on SIGTERM; Batch never retries TerminateJob or timeouts, so a host went away.
        batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.custom({ onExitCode: '143' })),
        batch.RetryStrategy.of(batch.Action.RETRY, batch.Reason.CANNOT_PULL_CONTAINER),
        batch.RetryStrategy.of(batch.Action.EXIT, batch.Reason.custom({ onReason: '*' })),
      ],
      timeout: Duration.hours(s.timeoutHours),
    };
    this.jobDefinition = multiNode
      ? new batch.MultiNodeJobDefinition(this, 'MultiNodeJob', {
          ...jobProps,
          // Every node runs the same container; the job ends when the main node (torchrun's node rank 0) exits.
          containers: [{ container, startNode: 0, endNode: s.nodes - 1 }],
          mainNode: 0,
          instanceType: new ec2.InstanceType(s.instanceTypes[0]!),
        })
      : new batch.EcsJobDefinition(this, 'Job', { ...jobProps, container });
  }

  /** Read and write under runs/ (datasets' resolved config, policy versions, checkpoints, metrics, state). */
  private grantRuns(bucket: s3.IBucket): void {
    const runs = keyWildcard(folderOf(KEY_TEMPLATES.runPrefix, 'runId'));
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
        resources: [bucket.arnForObjects(runs)],
      }),
    );
    this.role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': [runs] } },
      }),
    );
    acknowledgeRunKeyPatterns(this.role, bucket, [runs]);
  }
}
