// The house function construct: each bind call grants and sets its variable together, and a variable the
// handler requires but no bind call set fails synth.
import { join } from 'node:path';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { ToolrlFunction } from '../../infra/lib/constructs/toolrl-function.ts';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';

const SETTINGS = {
  memoryMb: 512,
  timeoutSec: 60,
  ephemeralStorageMb: 512,
  batchSize: 10,
  maxBatchingWindowSec: 1,
  maxConcurrency: 4,
};

function stackWithFunction(requiredEnv: string[] = []) {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Test');
  const fn = new ToolrlFunction(stack, 'Fn', {
    stage: 'reward',
    code: {
      kind: 'esbuild',
      entry: join(REPO_ROOT, 'test/fixtures/infra/handler.ts'),
      projectRoot: REPO_ROOT,
    },
    settings: SETTINGS,
    logRetention: logs.RetentionDays.ONE_WEEK,
    envName: 'test',
    requiredEnv,
  });
  const pair = (id: string) => ({
    name: 'reward' as const,
    queue: new sqs.Queue(stack, id),
    deadLetterQueue: new sqs.Queue(stack, `${id}Dlq`),
  });
  return { app, stack, fn, pair, bucket: new s3.Bucket(stack, 'Bucket') };
}

describe('ToolrlFunction', () => {
  it('bindQueueSender grants SendMessage on that queue and sets its URL variable in one call', () => {
    // GIVEN a function and a queue  WHEN it is bound as a sender
    const { stack, fn, pair } = stackWithFunction();
    const target = pair('Target');
    fn.bindQueueSender({ ...target, name: 'scored-groups' });
    // THEN the template has both the variable and the grant, on the same queue
    const t = Template.fromStack(stack);
    const queueId = stack.getLogicalId(target.queue.node.defaultChild as sqs.CfnQueue);
    t.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { TOOLRL_QUEUE_URL_SCORED_GROUPS: { Ref: queueId }, TOOLRL_ENV: 'test' } },
    });
    const statements = Object.values(t.findResources('AWS::IAM::Policy')).flatMap(
      (p) => p.Properties.PolicyDocument.Statement,
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: expect.arrayContaining(['sqs:SendMessage']),
        Resource: { 'Fn::GetAtt': [queueId, 'Arn'] },
      }),
    );
  });

  it('bindBucket grants only the listed key patterns (and listing, for 404s), and sets TOOLRL_BUCKET', () => {
    const { stack, fn, bucket } = stackWithFunction();
    fn.bindBucket(bucket, { read: ['runs/*/a/*'], write: ['runs/*/b/*'] });
    const t = Template.fromStack(stack);
    const bucketId = stack.getLogicalId(bucket.node.defaultChild as s3.CfnBucket);
    const objects = (p: string) => ({ 'Fn::Join': ['', [{ 'Fn::GetAtt': [bucketId, 'Arn'] }, `/${p}`]] });
    const statements = Object.values(t.findResources('AWS::IAM::Policy')).flatMap(
      (p) => p.Properties.PolicyDocument.Statement,
    );
    expect(statements).toContainEqual(
      expect.objectContaining({ Action: 's3:GetObject', Resource: objects('runs/*/a/*') }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({
        Action: ['s3:PutObject', 's3:PutObjectTagging'],
        Resource: objects('runs/*/b/*'),
      }),
    );
    expect(statements).toContainEqual(
      expect.objectContaining({ Action: 's3:ListBucket', Resource: { 'Fn::GetAtt': [bucketId, 'Arn'] } }),
    );
    // nothing else touches the bucket
    expect(statements.filter((st) => JSON.stringify(st).includes(bucketId))).toHaveLength(3);
    t.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: { TOOLRL_BUCKET: { Ref: bucketId }, TOOLRL_ENV: 'test' } },
    });
  });

  it('fails synth when the handler requires a variable that no bind call set, naming it', () => {
    // GIVEN a handler that needs its DLQ and the bucket, and only the consumer bind
    const { app, fn, pair } = stackWithFunction(['TOOLRL_DLQ_URL_REWARD', 'TOOLRL_BUCKET']);
    fn.bindQueueConsumer(pair('In'), SETTINGS);
    // THEN synth names the missing one only
    expect(() => app.synth()).toThrow(
      /reward: environment variable TOOLRL_BUCKET is required by the handler/,
    );
    expect(() => app.synth()).not.toThrow(/TOOLRL_DLQ_URL_REWARD/);
  });
});
