// cdk-nag's AwsSolutions pack over both stacks of each environment: no finding left unacknowledged.
import type { Stack } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { build } from './app.ts';

function findings(app: ReturnType<typeof build>['app']) {
  const report = new AwsSolutionsChecks(app).validateScope(app);
  return report.violations.flatMap((v) =>
    v.violatingResources.map((r) => `${v.ruleName} at ${r.constructPath}`),
  );
}

describe('cdk-nag AwsSolutions', () => {
  it.each(['dev', 'prod'])('has no unacknowledged finding in %s (with an alarm e-mail)', (env) => {
    const withEmail = (envs: Record<string, Record<string, unknown>>) => {
      envs[env]!.alarmEmail = 'oncall@example.com';
    };
    // With the learner's real image asset: pulling it brings its own grants.
    expect(findings(build({ env, edit: withEmail, realLearnerImage: true }).app)).toEqual([]);
    // and the same checks, run as the synth-time validation `cdk synth` performs, pass
    expect(() =>
      build({ env, nag: true, edit: withEmail, realLearnerImage: true }).app.synth(),
    ).not.toThrow();
  });

  it('would report a queue without a DLQ or TLS enforcement added to the stack (the check is live)', () => {
    const built = build();
    new sqs.Queue(built.pipeline as Stack, 'Careless', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    expect(findings(built.app)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^AwsSolutions-SQS3 at toolrl-dev-pipeline\/Careless/),
        expect.stringMatching(/^AwsSolutions-SQS4 at toolrl-dev-pipeline\/Careless/),
      ]),
    );
  });

  it('runs at synth: an unacknowledged finding makes app.synth() fail', () => {
    const built = build({ nag: true });
    new sqs.Queue(built.pipeline as Stack, 'Careless', { encryption: sqs.QueueEncryption.UNENCRYPTED });
    expect(() => built.app.synth()).toThrow(/AwsSolutions-SQS3/);
  });
});
