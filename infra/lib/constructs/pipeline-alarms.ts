// Alarms: one on every dead-letter queue (any message there is a bug or a bad input to look at) and one on the
// age of the oldest message of every queue (a stage that stopped keeping up), and an EventBridge rule on a
// learner job that failed for good. Notified by e-mail when the environment names an address.

import { Duration, Validations } from 'aws-cdk-lib';
import type * as batch from 'aws-cdk-lib/aws-batch';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { ATTR } from '#shared/ports/queue';
import type { QueueName } from '#shared/topology';
import type { QueuePair } from './toolrl-function.ts';

export interface PipelineAlarmsProps {
  readonly envName: string;
  readonly queues: Readonly<Record<QueueName, QueuePair>>;
  readonly oldestMessageAgeAlarmSec: number;
  readonly alarmEmail: string | null;
  /** The learner's Batch job queue: a job of it that ends FAILED is notified. */
  readonly learnerJobQueue: batch.IJobQueue;
}

export class PipelineAlarms extends Construct {
  readonly deadLetterAlarms: cloudwatch.Alarm[] = [];
  readonly ageAlarms: cloudwatch.Alarm[] = [];
  readonly topic?: sns.Topic;
  /** Matches a learner job's final FAILED state (after its retries, or terminated); e-mails it with the topic. */
  readonly learnerFailures: events.Rule;
  /** How many learner jobs failed (the rule's matches), for the dashboard. */
  readonly learnerFailuresMetric: cloudwatch.Metric;

  constructor(scope: Construct, id: string, props: PipelineAlarmsProps) {
    super(scope, id);
    if (props.alarmEmail) {
      this.topic = new sns.Topic(this, 'Topic', {
        displayName: `toolrl ${props.envName} alarms`,
        enforceSSL: true,
      });
      this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
      Validations.of(this.topic).acknowledge({
        id: 'AwsSolutions-SNS2',
        reason:
          'Alarm state changes carry no data, and CloudWatch cannot publish to a topic under the AWS-managed SNS key.',
      });
    }
    for (const pair of Object.values(props.queues)) {
      const dead = new cloudwatch.Alarm(this, `${pair.name}-dead-letters`, {
        alarmDescription: `Messages in the ${pair.name} dead-letter queue: read their ${ATTR.deadLetterReason} attribute`,
        metric: pair.deadLetterQueue.metricApproximateNumberOfMessagesVisible({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      const age = new cloudwatch.Alarm(this, `${pair.name}-oldest-message`, {
        alarmDescription: `The ${pair.name} queue's oldest message is older than ${props.oldestMessageAgeAlarmSec} s`,
        metric: pair.queue.metricApproximateAgeOfOldestMessage({
          period: Duration.minutes(1),
          statistic: 'Maximum',
        }),
        threshold: props.oldestMessageAgeAlarmSec,
        evaluationPeriods: 5,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
      });
      this.deadLetterAlarms.push(dead);
      this.ageAlarms.push(age);
    }
    // Batch emits FAILED once a job has no attempt left (a retried attempt goes back to RUNNABLE), so this is a
    // run that stopped training. The event itself, not a metric alarm, reaches the e-mail: it names the job
    // (the run id), why it failed and the log stream to read.
    this.learnerFailures = new events.Rule(this, 'learner-failed', {
      description: `toolrl ${props.envName}: a learner job failed (no attempt left, or terminated)`,
      eventPattern: {
        source: ['aws.batch'],
        detailType: ['Batch Job State Change'],
        detail: { status: ['FAILED'], jobQueue: [props.learnerJobQueue.jobQueueArn] },
      },
    });
    this.learnerFailuresMetric = new cloudwatch.Metric({
      namespace: 'AWS/Events',
      metricName: 'TriggeredRules',
      dimensionsMap: { RuleName: this.learnerFailures.ruleName },
      statistic: 'Sum',
      period: Duration.minutes(5),
      label: 'learner jobs failed',
    });
    if (this.topic) {
      const notify = new actions.SnsAction(this.topic);
      for (const alarm of [...this.deadLetterAlarms, ...this.ageAlarms]) alarm.addAlarmAction(notify);
      const field = (path: string) => events.EventField.fromPath(path);
      this.learnerFailures.addTarget(
        new targets.SnsTopic(this.topic, {
          message: events.RuleTargetInput.fromText(
            `toolrl ${props.envName}: learner job ${field('$.detail.jobName')} (${field('$.detail.jobId')}) ` +
              `failed: ${field('$.detail.statusReason')}; log stream ${field('$.detail.container.logStreamName')}`,
          ),
        }),
      );
    }
  }
}
