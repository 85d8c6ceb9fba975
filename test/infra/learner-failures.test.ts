// A learner job that fails for good (Batch's final FAILED state) is an EventBridge match: e-mailed through the
// alarm topic when the environment names an address, and counted on the dashboard.

import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { build, logicalId } from './app.ts';

const FAILED_LEARNER_JOB = (jobQueue: string) => ({
  source: ['aws.batch'],
  'detail-type': ['Batch Job State Change'],
  detail: { status: ['FAILED'], jobQueue: [{ 'Fn::GetAtt': [jobQueue, 'JobQueueArn'] }] },
});

describe('learner failures', () => {
  it("e-mails a failed job of the learner's queue, naming the job, its reason and its log stream", () => {
    // GIVEN prod with an alarm address
    const { pipelineTemplate: t } = build({
      env: 'prod',
      edit: (envs) => {
        envs.prod!.alarmEmail = 'oncall@example.com';
      },
    });
    // THEN a rule matches a FAILED state change of a job in toolrl-prod-learner (and no other queue's jobs)
    const jobQueue = logicalId(t, 'AWS::Batch::JobQueue', { JobQueueName: 'toolrl-prod-learner' });
    const topic = logicalId(t, 'AWS::SNS::Topic', {});
    t.hasResourceProperties('AWS::Events::Rule', {
      State: 'ENABLED',
      EventPattern: FAILED_LEARNER_JOB(jobQueue),
      Targets: [
        {
          Arn: { Ref: topic },
          Id: Match.anyValue(),
          InputTransformer: {
            InputPathsMap: {
              'detail-jobName': '$.detail.jobName',
              'detail-jobId': '$.detail.jobId',
              'detail-statusReason': '$.detail.statusReason',
              'detail-container-logStreamName': '$.detail.container.logStreamName',
            },
            InputTemplate: Match.stringLikeRegexp('toolrl prod: learner job <detail-jobName> .*failed'),
          },
        },
      ],
    });
    // and EventBridge may publish to the topic, over TLS like every other publisher
    t.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topic }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'sns:Publish',
            Effect: 'Allow',
            Principal: { Service: 'events.amazonaws.com' },
            Resource: { Ref: topic },
          }),
        ]),
      },
    });
  });

  it('keeps the rule, with no target, when no alarm e-mail is set (the dashboard still counts failures)', () => {
    const { pipelineTemplate: t } = build();
    const jobQueue = logicalId(t, 'AWS::Batch::JobQueue', { JobQueueName: 'toolrl-dev-learner' });
    t.hasResourceProperties('AWS::Events::Rule', {
      EventPattern: FAILED_LEARNER_JOB(jobQueue),
      Targets: Match.absent(),
    });
  });

  it("graphs the rule's matches on the dashboard", () => {
    const { pipelineTemplate: t } = build();
    const rule = logicalId(t, 'AWS::Events::Rule', {
      EventPattern: Match.objectLike({ 'detail-type': ['Batch Job State Change'] }),
    });
    const dashboard = Object.values(t.findResources('AWS::CloudWatch::Dashboard'))[0]!;
    // The body is a Fn::Join of JSON text and references; render each reference as <logicalId> and parse it.
    const parts = dashboard.Properties.DashboardBody['Fn::Join'][1] as unknown[];
    const text = parts
      .map((p) => (typeof p === 'string' ? p : `<${JSON.stringify(p).match(/"Ref":"([A-Za-z0-9]+)"/)?.[1]}>`))
      .join('');
    const widgets = (
      JSON.parse(text) as { widgets: { properties: { title: string; metrics?: unknown[] } }[] }
    ).widgets;
    const failed = widgets.find((w) => w.properties.title === 'Learner jobs failed');
    expect(failed?.properties.metrics).toEqual([
      [
        'AWS/Events',
        'TriggeredRules',
        'RuleName',
        `<${rule}>`,
        { label: 'learner jobs failed', stat: 'Sum' },
      ],
    ]);
  });
});
