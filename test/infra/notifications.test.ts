// The S3 notifications that drive the pipeline come from the topology's NOTIFICATIONS.

import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { queueName } from '#shared/deployment/names';
import { NOTIFICATIONS } from '#shared/topology';
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
});
