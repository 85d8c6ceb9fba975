// The GPU learner on AWS Batch: GPU hosts per environment, retries for host loss only, and run-starter's
// right to submit it.

import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { queueName } from '#shared/deployment/names';
import { build, logicalId } from './app.ts';

describe('learner on AWS Batch', () => {
  // Two synths, the first in this worker paying the CDK app's cold start: over a minute on a loaded 2-core machine.
  it('runs dev on spot g5/g6 hosts with the NVIDIA AL2023 image and prod on on-demand p4d/p5', () => {
    build().pipelineTemplate.hasResourceProperties('AWS::Batch::ComputeEnvironment', {
      Type: 'managed',
      ComputeResources: Match.objectLike({
        Type: 'SPOT',
        AllocationStrategy: 'SPOT_PRICE_CAPACITY_OPTIMIZED',
        InstanceTypes: ['g5.xlarge', 'g6.xlarge'],
        MinvCpus: 0,
        MaxvCpus: 8,
        Ec2Configuration: [{ ImageType: 'ECS_AL2023_NVIDIA' }],
      }),
    });
    build({ env: 'prod' }).pipelineTemplate.hasResourceProperties('AWS::Batch::ComputeEnvironment', {
      ComputeResources: Match.objectLike({ Type: 'EC2', InstanceTypes: ['p4d.24xlarge', 'p5.48xlarge'] }),
    });
  });

  it('asks for a GPU and retries only lost hosts (by reason or by the exit after SIGTERM) and failed pulls, exiting on anything else, in that order', () => {
    const { pipelineTemplate: t } = build();
    t.hasResourceProperties('AWS::Batch::JobDefinition', {
      JobDefinitionName: 'toolrl-dev-learner',
      Type: 'container',
      PlatformCapabilities: ['EC2'],
      Parameters: { runId: 'unset' },
      ContainerProperties: Match.objectLike({
        // after the image's entrypoint, `python -m toolrl_learner`
        Command: ['sqs', '--run-id', 'Ref::runId'],
        ResourceRequirements: [
          { Type: 'MEMORY', Value: '14336' },
          { Type: 'VCPU', Value: '4' },
          { Type: 'GPU', Value: '1' },
        ],
      }),
      RetryStrategy: {
        Attempts: 5,
        EvaluateOnExit: [
          { Action: 'RETRY', OnStatusReason: 'Host EC2*' },
          // the learner's exit after a SIGTERM it checkpointed on, when the host's termination is not yet recorded
          { Action: 'RETRY', OnExitCode: '143' },
          { Action: 'RETRY', OnReason: 'CannotPullContainerError:*' },
          { Action: 'EXIT', OnReason: '*' },
        ],
      },
      Timeout: { AttemptDurationSeconds: 24 * 3600 },
    });
  });

  it("gives the learner the bucket, its queue (to consume, and to forward other runs' messages) and DLQ, and the W&B key from Secrets Manager", () => {
    const { pipelineTemplate: t } = build();
    const queue = logicalId(t, 'AWS::SQS::Queue', { QueueName: queueName('dev', 'scored-groups') });
    const job = Object.values(t.findResources('AWS::Batch::JobDefinition'))[0]!.Properties
      .ContainerProperties;
    const env = Object.fromEntries(
      job.Environment.map((e: { Name: string; Value: unknown }) => [e.Name, e.Value]),
    );
    expect(env[FUNCTION_ENV.queueUrl('scored-groups')]).toEqual({ Ref: queue });
    expect(env[FUNCTION_ENV.bucket]).toBeDefined();
    expect(env[FUNCTION_ENV.deadLetterQueueUrl('scored-groups')]).toBeDefined();
    // The key itself never appears in the template: ECS resolves it at container start.
    expect(job.Secrets).toEqual([
      { Name: 'WANDB_API_KEY', ValueFrom: { 'Fn::Join': ['', [expect.anything(), ':WANDB_API_KEY::']] } },
    ]);
    expect(JSON.stringify(job.Environment)).not.toMatch(/WANDB/);
    // runs share the queue: the learner forwards another run's message, sending it to the queue again
    const role = logicalId(t, 'AWS::IAM::Role', {
      Description: 'toolrl learner: its run prefix in the bucket and the scored-groups queue',
    });
    const statements = Object.values(t.findResources('AWS::IAM::Policy'))
      .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([{ Ref: role }]))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: expect.arrayContaining(['sqs:SendMessage']),
        Resource: { 'Fn::GetAtt': [queue, 'Arn'] },
      }),
    );
  });

  it('lets run-starter, and no other stage, submit the learner job', () => {
    const { pipelineTemplate: t } = build();
    const submitters = Object.values(t.findResources('AWS::IAM::Policy')).filter((p) =>
      JSON.stringify(p.Properties.PolicyDocument).includes('batch:SubmitJob'),
    );
    expect(submitters).toHaveLength(1);
    const runStarterRole = logicalId(t, 'AWS::IAM::Role', { Description: 'toolrl dev run-starter stage' });
    expect(submitters[0]!.Properties.Roles).toEqual([{ Ref: runStarterRole }]);
    const job = logicalId(t, 'AWS::Batch::JobDefinition', {});
    const jobQueue = logicalId(t, 'AWS::Batch::JobQueue', { JobQueueName: 'toolrl-dev-learner' });
    expect(submitters[0]!.Properties.PolicyDocument.Statement).toContainEqual(
      expect.objectContaining({
        Action: 'batch:SubmitJob',
        Resource: [{ 'Fn::GetAtt': [jobQueue, 'JobQueueArn'] }, { Ref: job }],
      }),
    );
  });

  it('runs prod as one 8-GPU instance: 8 GPUs for the job, torchrun with one FSDP2 rank per GPU, shared memory', () => {
    const { pipelineTemplate: t } = build({ env: 'prod' });
    t.hasResourceProperties('AWS::Batch::JobDefinition', {
      Type: 'container',
      ContainerProperties: Match.objectLike({
        Command: ['launch', '--nproc-per-node=8', 'sqs', '--run-id', 'Ref::runId'],
        ResourceRequirements: [
          { Type: 'MEMORY', Value: '1000000' },
          { Type: 'VCPU', Value: '88' },
          { Type: 'GPU', Value: '8' },
        ],
        // NCCL between the 8 ranks goes through /dev/shm
        LinuxParameters: Match.objectLike({ SharedMemorySize: 250000 }),
      }),
    });
    // one instance, no multi-node networking
    t.resourceCountIs('AWS::EC2::PlacementGroup', 0);
  });

  it('runs a multi-node learner as a Batch multi-node parallel job: every node torchrun, one cluster placement group, all traffic between the hosts only', () => {
    // GIVEN prod with 2 p5 instances per learner job
    const { pipelineTemplate: t } = build({
      env: 'prod',
      edit: (envs) => {
        Object.assign(envs.prod!.learner as object, {
          nodes: 2,
          instanceTypes: ['p5.48xlarge'],
          maxvCpus: 384,
        });
      },
    });
    // THEN the job definition is multinode: 2 nodes, the main node 0, the same container on both
    t.hasResourceProperties('AWS::Batch::JobDefinition', {
      Type: 'multinode',
      JobDefinitionName: 'toolrl-prod-learner',
      Parameters: { runId: 'unset' },
      NodeProperties: {
        NumNodes: 2,
        MainNode: 0,
        NodeRangeProperties: [
          {
            TargetNodes: '0:1',
            Container: Match.objectLike({
              InstanceType: 'p5.48xlarge',
              Command: ['launch', '--nproc-per-node=8', 'sqs', '--run-id', 'Ref::runId'],
              ResourceRequirements: Match.arrayWith([{ Type: 'GPU', Value: '8' }]),
            }),
          },
        ],
      },
      RetryStrategy: Match.objectLike({ Attempts: 3 }),
    });
    // AND the hosts share a cluster placement group, in one Availability Zone
    const group = logicalId(t, 'AWS::EC2::PlacementGroup', { Strategy: 'cluster' });
    t.hasResourceProperties('AWS::Batch::ComputeEnvironment', {
      ComputeResources: Match.objectLike({
        Type: 'EC2',
        PlacementGroup: { 'Fn::GetAtt': [group, 'GroupName'] },
        Subnets: [Match.anyValue()],
      }),
    });
    // AND they may talk to each other (rendezvous, NCCL), and to nothing else inbound
    const sg = logicalId(t, 'AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('toolrl learner hosts'),
    });
    t.hasResourceProperties('AWS::EC2::SecurityGroupIngress', {
      GroupId: { 'Fn::GetAtt': [sg, 'GroupId'] },
      SourceSecurityGroupId: { 'Fn::GetAtt': [sg, 'GroupId'] },
      IpProtocol: '-1',
    });
    t.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('toolrl learner hosts'),
      SecurityGroupIngress: Match.absent(),
    });
  });

  it('keeps the hosts unreachable from outside: no inbound rule, HTTPS out only, IMDSv2, encrypted root volume', () => {
    const { pipelineTemplate: t } = build();
    t.hasResourceProperties('AWS::EC2::SecurityGroup', {
      GroupDescription: Match.stringLikeRegexp('toolrl learner hosts'),
      SecurityGroupIngress: Match.absent(),
      SecurityGroupEgress: [
        { CidrIp: '0.0.0.0/0', IpProtocol: 'tcp', FromPort: 443, ToPort: 443, Description: Match.anyValue() },
      ],
    });
    t.hasResourceProperties('AWS::EC2::LaunchTemplate', {
      LaunchTemplateData: Match.objectLike({
        MetadataOptions: { HttpTokens: 'required' },
        BlockDeviceMappings: [
          { DeviceName: '/dev/xvda', Ebs: { Encrypted: true, VolumeSize: 200, VolumeType: 'gp3' } },
        ],
      }),
    });
  });
});
