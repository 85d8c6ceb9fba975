// The stage functions: packaging, event sources from the settings, and least-privilege roles where the
// bind helpers' grants and environment variables always come together.

import type { Template } from 'aws-cdk-lib/assertions';
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { deadLetterQueueName, queueName } from '#shared/deployment/names';
import { consumedQueue, FUNCTION_SENDS, type FunctionName } from '#shared/topology';
import { build, logicalId } from './app.ts';

/** The template's Lambda function of a stage (by the description the house construct gives it). */
function stageFunction(t: Template, stage: FunctionName, env = 'dev') {
  const id = logicalId(t, 'AWS::Lambda::Function', { Description: `toolrl ${env} ${stage} stage` });
  return { id, props: t.toJSON().Resources[id].Properties };
}

/** Every statement of the inline policies attached to a function's role. */
function roleStatements(t: Template, roleRef: unknown) {
  return Object.values(t.findResources('AWS::IAM::Policy'))
    .filter((p) => JSON.stringify(p.Properties.Roles) === JSON.stringify([roleRef]))
    .flatMap(
      (p) => p.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[],
    );
}

const actions = (s: { Action: string | string[] }) => (Array.isArray(s.Action) ? s.Action : [s.Action]);
const resources = (s: { Resource: unknown }) => (Array.isArray(s.Resource) ? s.Resource : [s.Resource]);

describe('stage functions', () => {
  it('subscribes every stage with partial batch responses and the batch settings of the environment', () => {
    // GIVEN dev overrides rollout's and reward's maximum concurrency (cdk.json) and keeps the topology's batches
    const { pipelineTemplate: t } = build();
    const expected: Record<FunctionName, { BatchSize: number; MaximumConcurrency: number; window?: number }> =
      {
        'run-starter': { BatchSize: 1, MaximumConcurrency: 2 },
        feeder: { BatchSize: 1, MaximumConcurrency: 2 },
        rollout: { BatchSize: 1, MaximumConcurrency: 10 },
        'tool-call': { BatchSize: 10, MaximumConcurrency: 10, window: 1 },
        reward: { BatchSize: 10, MaximumConcurrency: 5, window: 1 },
      };
    for (const [stage, e] of Object.entries(expected)) {
      const fn = stageFunction(t, stage as FunctionName);
      t.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        FunctionName: { Ref: fn.id },
        BatchSize: e.BatchSize,
        MaximumBatchingWindowInSeconds: e.window ?? Match.absent(),
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        ScalingConfig: { MaximumConcurrency: e.MaximumConcurrency },
      });
    }
  });

  it('packages rollout, tool-call and reward as x86_64 container images, rollout with 10 GB of /tmp', () => {
    const { pipelineTemplate: t } = build();
    const rollout = stageFunction(t, 'rollout').props;
    expect(rollout).toMatchObject({
      PackageType: 'Image',
      Architectures: ['x86_64'],
      MemorySize: 6144, // dev
      EphemeralStorage: { Size: 10240 },
      Timeout: 900,
    });
    expect(rollout.Runtime).toBeUndefined();
    // tool-call and reward run the same image (Python, the sandbox, bfcl-eval), each by its own command
    for (const stage of ['tool-call', 'reward'] as const)
      expect(stageFunction(t, stage).props).toMatchObject({
        PackageType: 'Image',
        Architectures: ['x86_64'],
        ImageConfig: { Command: [`${stage}.handler`] },
      });
    expect(stageFunction(t, 'tool-call').props.Code.ImageUri).toEqual(
      stageFunction(t, 'reward').props.Code.ImageUri,
    );
    expect(rollout.ImageConfig).toEqual({ Command: ['rollout.handler'] });
    // prod gives rollout Lambda's maximum memory
    expect(stageFunction(build({ env: 'prod' }).pipelineTemplate, 'rollout', 'prod').props.MemorySize).toBe(
      10240,
    );
  });

  it('bundles the other stages with esbuild for Node 24 on arm64, with source maps on', () => {
    const { pipelineTemplate: t } = build();
    for (const stage of ['run-starter', 'feeder'] as const) {
      expect(stageFunction(t, stage).props).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        LoggingConfig: { LogFormat: 'JSON', LogGroup: { Ref: expect.any(String) } },
        Environment: {
          Variables: expect.objectContaining({ NODE_OPTIONS: '--enable-source-maps', TOOLRL_ENV: 'dev' }),
        },
      });
    }
  });

  it('sets the URL of each queue a stage sends to and of its own queue, and grants SendMessage on exactly those sends and its DLQ', () => {
    const { pipelineTemplate: t } = build();
    const queueIds = Object.fromEntries(
      Object.entries(t.findResources('AWS::SQS::Queue')).map(([id, q]) => [q.Properties.QueueName, id]),
    );
    for (const stage of Object.keys(FUNCTION_SENDS) as FunctionName[]) {
      const fn = stageFunction(t, stage);
      const vars = fn.props.Environment.Variables as Record<string, unknown>;
      for (const q of FUNCTION_SENDS[stage])
        expect(vars[FUNCTION_ENV.queueUrl(q)]).toEqual({ Ref: queueIds[queueName('dev', q)] });
      // Its own queue: a failed record is made visible again after a short backoff through it.
      const own = queueIds[queueName('dev', consumedQueue(stage))]!;
      expect(vars[FUNCTION_ENV.queueUrl(consumedQueue(stage))]).toEqual({ Ref: own });
      const visibilityTargets = roleStatements(t, { Ref: fn.props.Role['Fn::GetAtt'][0] })
        .filter((s) => actions(s).includes('sqs:ChangeMessageVisibility'))
        .flatMap((s) => resources(s).map((r) => (r as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]));
      expect(visibilityTargets).toEqual([own]);
      const sendTargets = roleStatements(t, { Ref: fn.props.Role['Fn::GetAtt'][0] })
        .filter((s) => actions(s).includes('sqs:SendMessage'))
        .flatMap((s) => resources(s).map((r) => (r as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0]));
      const allowed = FUNCTION_SENDS[stage].map((q) => queueIds[queueName('dev', q)]);
      // Besides its sends, only its own queue's DLQ (a poison message goes there with its reason).
      const ownDlq = queueIds[deadLetterQueueName('dev', consumedQueue(stage))]!;
      expect(sendTargets.sort()).toEqual([...allowed, ownDlq].sort());
    }
  });

  it('limits the tool-call role to its queues, its run inputs, the claim-check prefix, dead-lettering and the tool secret', () => {
    const { pipelineTemplate: t } = build();
    const fn = stageFunction(t, 'tool-call');
    const statements = roleStatements(t, { Ref: fn.props.Role['Fn::GetAtt'][0] });
    const on = (action: string) =>
      statements
        .filter((s) => actions(s).includes(action))
        .flatMap(resources)
        .map((r) => JSON.stringify(r).match(/"\/([^"]*)"\]\]\}$/)?.[1] ?? JSON.stringify(r));
    // Writes claim-checked messages and what a dead-lettered group settles (its record, a validation summary, the
    // run's status); reads its run's config and tool configs, messages, and what dead-lettering reads.
    expect(on('s3:PutObject').sort()).toEqual([
      'runs/*/dead-letters/*',
      'runs/*/messages/*',
      'runs/*/metrics/eval/*',
      'runs/*/queue-tally/*',
      'runs/*/run.json',
    ]);
    expect(on('s3:GetObject').sort()).toEqual([
      'runs/*/dead-letters/*',
      'runs/*/feeder/state.json',
      'runs/*/groups/*',
      'runs/*/input/*',
      'runs/*/learner/state.json',
      'runs/*/messages/*',
      'runs/*/metrics/eval/*',
      'runs/*/run.json',
    ]);
    expect(
      statements
        .flatMap(actions)
        .filter((a) => a.startsWith('s3:'))
        .sort(),
    ).toEqual(['s3:GetObject', 's3:ListBucket', 's3:PutObject', 's3:PutObjectTagging']);
    expect(statements.flatMap(actions).filter((a) => a.startsWith('batch:'))).toEqual([]);
    expect(statements.flatMap(actions)).toContain('secretsmanager:GetSecretValue');
    expect(fn.props.Environment.Variables[FUNCTION_ENV.toolSecretsId]).toBeDefined();
  });

  it("scopes every stage's writes to what it produces", () => {
    const { pipelineTemplate: t } = build();
    const writes = (stage: FunctionName) =>
      roleStatements(t, { Ref: stageFunction(t, stage).props.Role['Fn::GetAtt'][0] })
        .filter((s) => actions(s).includes('s3:PutObject'))
        .flatMap(resources)
        .map((r) => JSON.stringify(r).match(/"\/([^"]*)"\]\]\}$/)?.[1])
        .sort();
    // (test/infra/bucket-access.test.ts checks these against the keys the stages' code writes)
    expect(writes('run-starter')).toEqual([
      'runs/*/learner/lease.json',
      'runs/*/queue-tally/*',
      'runs/*/run.json',
    ]);
    expect(writes('rollout')).toEqual([
      'runs/*/dead-letters/*',
      'runs/*/messages/*',
      'runs/*/metrics/eval/*',
      'runs/*/queue-tally/*',
      'runs/*/run.json',
    ]);
    for (const stage of Object.keys(FUNCTION_SENDS) as FunctionName[]) {
      expect(writes(stage)).not.toContain('runs/*');
      expect(writes(stage).filter((p) => /policy|checkpoints|learner\/state/.test(p ?? ''))).toEqual([]);
    }
  });

  it('writes each function log to its own group with the retention of the environment', () => {
    const { pipelineTemplate: t } = build({ env: 'prod' });
    const fn = stageFunction(t, 'reward', 'prod');
    const group = fn.props.LoggingConfig.LogGroup.Ref as string;
    t.hasResourceProperties('AWS::Logs::LogGroup', { RetentionInDays: 90 });
    expect(t.toJSON().Resources[group].Properties.RetentionInDays).toBe(90);
    // and its role may write to that group only (no managed basic-execution policy)
    const role = t.toJSON().Resources[fn.props.Role['Fn::GetAtt'][0]].Properties;
    expect(role.ManagedPolicyArns).toBeUndefined();
    const logs = roleStatements(t, { Ref: fn.props.Role['Fn::GetAtt'][0] }).filter((s) =>
      actions(s).includes('logs:PutLogEvents'),
    );
    expect(logs).toEqual([expect.objectContaining({ Resource: { 'Fn::GetAtt': [group, 'Arn'] } })]);
  });
});
