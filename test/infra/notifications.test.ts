// The S3 notifications that drive the pipeline come from the topology's NOTIFICATIONS.

import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { queueName } from '#shared/deployment/names';
import { notificationTarget } from '#shared/runtime/notifications';
import { fill } from '#shared/templates';
import { KEY_TEMPLATES, NOTIFICATIONS } from '#shared/topology';
import { build, logicalId } from './app.ts';

describe('upload notifications', () => {
  it('sends each NOTIFICATIONS rule to its queue, leaving notifications CDK does not manage in place', () => {
    const { pipelineTemplate: t } = build();
    const config = Object.values(t.findResources('Custom::S3BucketNotifications'));
    expect(config).toHaveLength(1);
    expect(config[0]!.Properties.Managed).toBe(false);
    const rules = config[0]!.Properties.NotificationConfiguration.QueueConfigurations;
    // The dataset upload (starts a run), the policy pointer and the learner state (wake the feeder).
    expect(rules).toEqual(
      NOTIFICATIONS.map((n) => ({
        Events: ['s3:ObjectCreated:*'],
        Filter: {
          Key: {
            FilterRules: [
              { Name: 'suffix', Value: n.suffix },
              { Name: 'prefix', Value: n.prefix },
            ],
          },
        },
        QueueArn: {
          'Fn::GetAtt': [logicalId(t, 'AWS::SQS::Queue', { QueueName: queueName('dev', n.queue) }), 'Arn'],
        },
      })),
    );
    expect(rules[0].Filter.Key.FilterRules).toContainEqual({ Name: 'suffix', Value: '.parquet' });
  });

  it('lets S3 send only from the data bucket to the run-events queue', () => {
    const { pipelineTemplate: t } = build();
    const runEvents = logicalId(t, 'AWS::SQS::Queue', { QueueName: queueName('dev', 'run-events') });
    t.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: runEvents }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 's3.amazonaws.com' },
            Action: Match.arrayWith(['sqs:SendMessage']),
            Condition: { ArnLike: { 'aws:SourceArn': Match.anyValue() } },
          }),
        ]),
      },
    });
  });

  it('wakes no stage for a file the pipeline writes, but the policy pointer and the learner state (the feeder)', () => {
    const ids = {
      runId: 'r1',
      groupId: 'e0-p3',
      sampleIndex: 0,
      version: 3,
      step: 16,
      revision: 1,
      id: 'm1',
      stage: 'reward',
      messageId: 'x1',
      writer: 'worker-1',
    };
    // Folders get the files the learner writes into them (metrics, a bundle, a checkpoint).
    const inFolder: Partial<Record<keyof typeof KEY_TEMPLATES, string[]>> = {
      metrics: [
        'metrics.jsonl',
        'batches.jsonl',
        'reward_curve.png',
        'tensorboard/events.out.tfevents.1.host',
      ],
      policyVersion: ['manifest.json', 'model.onnx', 'model.onnx.data', 'tokenizer.json', 'config.json'],
      checkpoint: ['model.safetensors', 'trainer_state.json', 'optimizer.pt'],
    };
    const written = (Object.keys(KEY_TEMPLATES) as (keyof typeof KEY_TEMPLATES)[])
      .filter((k) => k !== 'config' && k !== 'inputPrefix' && k !== 'runPrefix')
      .flatMap((k) => {
        const key = fill(KEY_TEMPLATES[k], ids);
        return key.endsWith('/') ? (inFolder[k] ?? ['x.json']).map((f) => key + f) : [key];
      });
    const woken = Object.fromEntries(
      written.flatMap((k) => (notificationTarget(k) ? [[k, notificationTarget(k)]] : [])),
    );
    expect(woken).toEqual({
      'runs/r1/policy/LATEST.json': 'policy-events',
      'runs/r1/learner/state.json': 'policy-events',
    });
    // A user's uploads still notify: the config (then looks at the inputs) and a Parquet dataset.
    expect(notificationTarget('runs/r1/input/config.yaml')).toBe('run-events');
    expect(notificationTarget('runs/r1/input/train.parquet')).toBe('run-events');
  });
});
