// One CloudWatch dashboard per environment: queue depths and oldest-message ages, dead letters, each stage's
// errors, throttles and durations, the learner's reward, step time and policy version (from its logs) and its
// failed jobs.

import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Construct } from 'constructs';
import type { QueueName } from '#shared/topology';
import type { LearnerMetrics } from './learner-metrics.ts';
import type { QueuePair, ToolrlFunction } from './toolrl-function.ts';

export interface PipelineDashboardProps {
  readonly envName: string;
  readonly queues: Readonly<Record<QueueName, QueuePair>>;
  readonly functions: readonly ToolrlFunction[];
  readonly learner: LearnerMetrics;
  readonly alarms: readonly cloudwatch.IAlarm[];
  /** Learner jobs that ended FAILED (PipelineAlarms' EventBridge rule). */
  readonly learnerFailures: cloudwatch.IMetric;
}

const PERIOD = Duration.minutes(1);

export class PipelineDashboard extends Construct {
  readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: PipelineDashboardProps) {
    super(scope, id);
    const pairs = Object.values(props.queues);
    const graph = (title: string, left: cloudwatch.IMetric[], width = 12) =>
      new cloudwatch.GraphWidget({
        title,
        left,
        width,
        height: 6,
        legendPosition: cloudwatch.LegendPosition.BOTTOM,
      });
    const perQueue = (m: (p: QueuePair) => cloudwatch.Metric) =>
      pairs.map((p) => m(p).with({ label: p.name, period: PERIOD }));
    const perFunction = (m: (f: ToolrlFunction) => cloudwatch.Metric) =>
      props.functions.map((f) => m(f).with({ label: f.stage, period: PERIOD }));

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `toolrl-${props.envName}`,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(
      new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: [...props.alarms], width: 24, height: 3 }),
    );
    this.dashboard.addWidgets(
      graph(
        'Queue depth (visible)',
        perQueue((p) => p.queue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum' })),
      ),
      graph(
        'In flight (not visible)',
        perQueue((p) => p.queue.metricApproximateNumberOfMessagesNotVisible({ statistic: 'Maximum' })),
      ),
    );
    this.dashboard.addWidgets(
      graph(
        'Oldest message age (s)',
        perQueue((p) => p.queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum' })),
      ),
      graph(
        'Dead letters',
        perQueue((p) => p.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum' })),
      ),
    );
    this.dashboard.addWidgets(
      graph(
        'Stage errors',
        perFunction((f) => f.fn.metricErrors({ statistic: 'Sum' })),
        8,
      ),
      graph(
        'Stage throttles',
        perFunction((f) => f.fn.metricThrottles({ statistic: 'Sum' })),
        8,
      ),
      graph(
        'Stage concurrency',
        perFunction((f) => f.fn.metric('ConcurrentExecutions', { statistic: 'Maximum' })),
        8,
      ),
    );
    this.dashboard.addWidgets(
      graph(
        'Stage duration p50 (ms)',
        perFunction((f) => f.fn.metricDuration({ statistic: 'p50' })),
      ),
      graph(
        'Stage duration p99 (ms)',
        perFunction((f) => f.fn.metricDuration({ statistic: 'p99' })),
      ),
    );
    const l = props.learner;
    this.dashboard.addWidgets(
      graph('Learner reward (mean over the step)', [l.rewardMean], 6),
      graph('Learner step time (s)', [l.stepTime], 6),
      graph('Policy version / groups consumed', [l.policyVersion, l.groups], 6),
      graph('Learner jobs failed', [props.learnerFailures], 6),
    );
  }
}
