// Queues from the topology: a DLQ each, encryption, visibility >= 6x the consumer's timeout, alarms.

import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { deadLetterQueueName, queueName } from '#shared/deployment/names';
import { QUEUES } from '#shared/topology';
import { build, logicalId } from './app.ts';

describe('pipeline queues', () => {
  it('gives every topology queue an encrypted, TLS-only DLQ with maxReceiveCount >= 5', () => {
    const { pipelineTemplate: t } = build();
    for (const spec of Object.values(QUEUES)) {
      const dlq = logicalId(t, 'AWS::SQS::Queue', { QueueName: deadLetterQueueName('dev', spec.name) });
      t.hasResourceProperties('AWS::SQS::Queue', {
        QueueName: queueName('dev', spec.name),
        SqsManagedSseEnabled: true,
        VisibilityTimeout: spec.visibilityTimeoutSec,
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': [dlq, 'Arn'] },
          maxReceiveCount: spec.maxReceiveCount,
        },
      });
      expect(spec.maxReceiveCount).toBeGreaterThanOrEqual(5);
      t.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: dlq }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
    }
  });

  it("sets each queue's visibility timeout to at least six times its consumer function's timeout", () => {
    // WHEN the template's event source mappings are followed from queue to function
    const { pipelineTemplate: t } = build();
    const queues = t.findResources('AWS::SQS::Queue');
    const functions = t.findResources('AWS::Lambda::Function');
    const mappings = Object.values(t.findResources('AWS::Lambda::EventSourceMapping'));
    // THEN all five stages are subscribed, each to a queue that outlasts six of its invocations
    expect(mappings).toHaveLength(5);
    for (const m of mappings) {
      const queue = queues[m.Properties.EventSourceArn['Fn::GetAtt'][0]]!;
      const fn = functions[m.Properties.FunctionName.Ref]!;
      expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.Properties.Timeout);
    }
  });

  it('alarms on a message in any DLQ and on the oldest-message age of every queue', () => {
    const { pipelineTemplate: t } = build();
    for (const spec of Object.values(QUEUES)) {
      const dlq = logicalId(t, 'AWS::SQS::Queue', { QueueName: deadLetterQueueName('dev', spec.name) });
      const queue = logicalId(t, 'AWS::SQS::Queue', { QueueName: queueName('dev', spec.name) });
      t.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateNumberOfMessagesVisible',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [dlq, 'QueueName'] } }],
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      });
      t.hasResourceProperties('AWS::CloudWatch::Alarm', {
        MetricName: 'ApproximateAgeOfOldestMessage',
        Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queue, 'QueueName'] } }],
        Threshold: 1800, // dev's oldestMessageAgeAlarmSec
      });
    }
  });

  it('notifies the alarm e-mail through a TLS-only topic when the environment names one', () => {
    // GIVEN prod with an alarm address
    const { pipelineTemplate: t } = build({
      env: 'prod',
      edit: (envs) => {
        envs.prod!.alarmEmail = 'oncall@example.com';
      },
    });
    // THEN every alarm (12: a DLQ and an age alarm per queue) notifies the topic and the address subscribes
    const topic = logicalId(t, 'AWS::SNS::Topic', {});
    t.hasResourceProperties('AWS::SNS::Subscription', { Protocol: 'email', Endpoint: 'oncall@example.com' });
    const alarms = Object.values(t.findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(2 * Object.keys(QUEUES).length);
    for (const a of alarms) expect(a.Properties.AlarmActions).toEqual([{ Ref: topic }]);
    t.hasResourceProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ]),
      },
    });
  });

  it('creates no topic when no alarm e-mail is set', () => {
    build().pipelineTemplate.resourceCountIs('AWS::SNS::Topic', 0);
  });
});
