// The dashboard and the learner's metrics: what an operator watches while a run trains.

import { describe, expect, it } from 'vitest';
import { QUEUES } from '#shared/topology';
import { build } from './app.ts';

/** The dashboard body with its CloudFormation tokens rendered as `<logicalId>`, as JSON. */
function dashboardBody(t: ReturnType<typeof build>['pipelineTemplate']) {
  const dashboards = Object.values(t.findResources('AWS::CloudWatch::Dashboard'));
  expect(dashboards).toHaveLength(1);
  const parts = dashboards[0]!.Properties.DashboardBody['Fn::Join'][1] as unknown[];
  const text = parts
    .map((p) =>
      typeof p === 'string'
        ? p
        : `<${JSON.stringify(p).match(/"(?:Ref|Fn::GetAtt)":\["?([A-Za-z0-9]+)/)?.[1]}>`,
    )
    .join('');
  return { name: dashboards[0]!.Properties.DashboardName, body: JSON.parse(text) as { widgets: Widget[] } };
}
interface Widget {
  properties: { title: string; metrics?: unknown[][]; alarms?: string[] };
}

describe('dashboard', () => {
  it('graphs depth, age and dead letters of every queue, and every function, with the alarms on top', () => {
    const { pipelineTemplate: t } = build();
    const { name, body } = dashboardBody(t);
    expect(name).toBe('toolrl-dev');
    const byTitle = Object.fromEntries(body.widgets.map((w) => [w.properties.title, w.properties]));
    const nQueues = Object.keys(QUEUES).length;
    for (const title of [
      'Queue depth (visible)',
      'In flight (not visible)',
      'Oldest message age (s)',
      'Dead letters',
    ])
      expect(byTitle[title]?.metrics).toHaveLength(nQueues);
    for (const title of [
      'Stage errors',
      'Stage throttles',
      'Stage concurrency',
      'Stage duration p50 (ms)',
      'Stage duration p99 (ms)',
    ])
      expect(byTitle[title]?.metrics).toHaveLength(6); // the five stages and the code runner
    expect(byTitle.Alarms?.alarms).toHaveLength(2 * nQueues);
    expect(body.widgets[0]!.properties.title).toBe('Alarms');
  });

  it("turns the learner's JSON step lines into metrics and graphs them", () => {
    const { pipelineTemplate: t } = build();
    for (const key of ['reward_mean', 'step_time_s', 'policy_version', 'groups'])
      t.hasResourceProperties('AWS::Logs::MetricFilter', {
        FilterPattern: '{ $.type = "step" }',
        MetricTransformations: [
          { MetricNamespace: 'toolrl/dev/learner', MetricName: key, MetricValue: `$.metrics.${key}` },
        ],
      });
    const { body } = dashboardBody(t);
    const learner = body.widgets.filter((w) =>
      JSON.stringify(w.properties.metrics ?? []).includes('toolrl/dev/learner'),
    );
    expect(learner.map((w) => w.properties.title)).toEqual([
      'Learner reward (mean over the step)',
      'Learner step time (s)',
      'Policy version / groups consumed',
    ]);
  });
});
