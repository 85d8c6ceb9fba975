// Alarms: one on every dead-letter queue (any message there is a bug or a bad input to look at) and one on the
// age of the oldest message of every queue (a stage that stopped keeping up). Notified by e-mail when the
// environment names an address.

import { Duration, Validations } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import type { QueueName } from '#shared/topology';
import type { QueuePair } from './toolrl-function.ts';

export interface PipelineAlarmsProps {
  readonly envName: string;
  readonly queues: Readonly<Record<QueueName, QueuePair>>;
  readonly oldestMessageAgeAlarmSec: number;
  readonly alarmEmail: string | null;
}

export class PipelineAlarms extends Construct {
  readonly deadLetterAlarms: cloudwatch.Alarm[] = [];
  readonly ageAlarms: cloudwatch.Alarm[] = [];
  readonly topic?: sns.Topic;

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
        alarmDescription: `Messages in the ${pair.name} dead-letter queue: read their toolrl-dead-letter-reason attribute`,
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
    if (this.topic) {
      const notify = new actions.SnsAction(this.topic);
      for (const alarm of [...this.deadLetterAlarms, ...this.ageAlarms]) alarm.addAlarmAction(notify);
    }
  }
}
