// CloudWatch metrics of the learner, extracted from its JSON `step` lines (the same lines as the stdio
// protocol's, `{"type": "step", "step": S, "metrics": {...metrics.jsonl keys}}`) by metric filters, so the
// learner needs no CloudWatch permission or client.
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** metrics.jsonl keys shown on the dashboard. */
export const LEARNER_DASHBOARD_METRICS = {
  rewardMean: 'reward_mean',
  stepTime: 'step_time_s',
  policyVersion: 'policy_version',
  groups: 'groups',
} as const;

export class LearnerMetrics extends Construct {
  readonly rewardMean: cloudwatch.Metric;
  readonly stepTime: cloudwatch.Metric;
  readonly policyVersion: cloudwatch.Metric;
  readonly groups: cloudwatch.Metric;

  constructor(scope: Construct, id: string, props: { envName: string; logGroup: logs.ILogGroup }) {
    super(scope, id);
    const namespace = `toolrl/${props.envName}/learner`;
    const metric = (key: string, statistic: string) => {
      new logs.MetricFilter(this, key, {
        logGroup: props.logGroup,
        // A step line without the key (or with null) publishes no data point for it.
        filterPattern: logs.FilterPattern.stringValue('$.type', '=', 'step'),
        metricNamespace: namespace,
        metricName: key,
        metricValue: `$.metrics.${key}`,
      });
      return new cloudwatch.Metric({ namespace, metricName: key, statistic, label: key });
    };
    const m = LEARNER_DASHBOARD_METRICS;
    this.rewardMean = metric(m.rewardMean, 'Average');
    this.stepTime = metric(m.stepTime, 'Average');
    this.policyVersion = metric(m.policyVersion, 'Maximum');
    this.groups = metric(m.groups, 'Sum');
  }
}
