// CDK's own helper functions (the S3-notifications handler, the VPC default-security-group restrictor) log to
// explicit groups with the environment's retention, like the stage functions, instead of groups kept forever.

import { describe, expect, it } from 'vitest';
import { build } from './app.ts';

type Resources = Record<string, { Type: string; Properties: Record<string, unknown> }>;

/** Each Lambda function's logical id -> the retention (days) of the log group its LoggingConfig names. */
function functionLogRetention(resources: Resources): Record<string, number | undefined> {
  const out: Record<string, number | undefined> = {};
  for (const [id, r] of Object.entries(resources)) {
    if (r.Type !== 'AWS::Lambda::Function') continue;
    const ref = (r.Properties.LoggingConfig as { LogGroup?: { Ref?: string } } | undefined)?.LogGroup?.Ref;
    const group = ref ? resources[ref] : undefined;
    out[id] =
      group?.Type === 'AWS::Logs::LogGroup' ? (group.Properties.RetentionInDays as number) : undefined;
  }
  return out;
}

describe("CDK's helper functions", () => {
  it.each([
    ['dev', 14],
    ['prod', 90],
  ])("log to a group kept for %s's logRetentionDays (%i), as every stage function does", (env, days) => {
    // GIVEN the pipeline stack of an environment
    const resources = build({ env }).pipelineTemplate.toJSON().Resources as Resources;
    const retention = functionLogRetention(resources);
    // THEN the two helpers CDK adds are among the functions, and every function's log group keeps `days`
    const helpers = Object.keys(retention).filter((id) =>
      /^(BucketNotificationsHandler|CustomVpcRestrictDefaultSGCustomResourceProvider)/.test(id),
    );
    expect(helpers).toHaveLength(2);
    expect(Object.keys(retention).length).toBeGreaterThanOrEqual(7); // 5 stages + the 2 helpers
    for (const [id, r] of Object.entries(retention)) expect(r, id).toBe(days);
  });

  it('gives each function a log group of its own (stage functions keep theirs)', () => {
    const resources = build().pipelineTemplate.toJSON().Resources as Resources;
    const groups = Object.values(resources)
      .filter((r) => r.Type === 'AWS::Lambda::Function')
      .map((r) => (r.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref);
    expect(new Set(groups).size).toBe(groups.length);
  });
});
