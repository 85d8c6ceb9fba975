// The transforms between the synthesized template and what LocalStack deploys: renaming an environment (the e2e
// suite synthesizes once), other visibility timeouts for tests, and the lifecycle rules LocalStack's
// CloudFormation ignores, put through S3's API instead. (test/e2e/template.test.ts deploys the real thing.)
import { describe, expect, it } from 'vitest';
import { type CfnLifecycleRule, s3LifecycleRule } from '../../infra/lib/localstack-stack.ts';
import {
  type CfnTemplate,
  renameEnvironment,
  withVisibilityTimeouts,
} from '../../infra/lib/localstack-template.ts';

const template = (env: string): CfnTemplate => ({
  Description: `toolrl ${env}: storage and queues`,
  Resources: {
    Q: {
      Type: 'AWS::SQS::Queue',
      Properties: {
        QueueName: `toolrl-${env}-rollout`,
        VisibilityTimeout: 900,
        Tags: [{ Key: 'environment', Value: env }],
      },
    },
    B: {
      Type: 'AWS::S3::Bucket',
      Properties: { BucketName: { 'Fn::Join': ['', [`toolrl-${env}-`, { Ref: 'AWS::AccountId' }]] } },
    },
  },
});

describe('the LocalStack template transforms', () => {
  it('renames every whole-word use of the environment name, and nothing inside another word', () => {
    // GIVEN a template of `dev` that also says "device" (a word that contains the name)
    const t = template('dev');
    t.Resources.Q!.Properties!.Note = 'the device runs dev';
    // WHEN it is renamed to e2e1
    const r = renameEnvironment(t, 'dev', 'e2e1');
    // THEN names, tags and the bucket's joined name change; "device" does not
    expect(r.Resources.Q!.Properties).toMatchObject({
      QueueName: 'toolrl-e2e1-rollout',
      Tags: [{ Key: 'environment', Value: 'e2e1' }],
      Note: 'the device runs e2e1',
    });
    expect(r).toMatchObject({ ...template('e2e1'), Resources: { B: template('e2e1').Resources.B } });
    expect(() => renameEnvironment(t, 'dev', 'Bad-Name')).toThrow(/environment name "Bad-Name" is invalid/);
  });

  it("sets a queue's visibility timeout by its topology name, and refuses one the template lacks", () => {
    const t = withVisibilityTimeouts(template('dev'), 'dev', { rollout: 45 });
    expect(t.Resources.Q!.Properties!.VisibilityTimeout).toBe(45);
    expect(template('dev').Resources.Q!.Properties!.VisibilityTimeout).toBe(900);
    expect(() => withVisibilityTimeouts(template('dev'), 'dev', { reward: 30 })).toThrow(
      /no queue named toolrl-dev-reward/,
    );
  });

  it("turns CloudFormation's lifecycle rules into S3's (tag filter, days, delete markers, noncurrent versions)", () => {
    expect(
      s3LifecycleRule({
        Id: 'expire-trajectories',
        Status: 'Enabled',
        ExpirationInDays: 30,
        TagFilters: [{ Key: 'toolrl-lifecycle', Value: 'trajectory' }],
      }),
    ).toEqual({
      ID: 'expire-trajectories',
      Status: 'Enabled',
      Filter: { Tag: { Key: 'toolrl-lifecycle', Value: 'trajectory' } },
      Expiration: { Days: 30 },
    });
    expect(
      s3LifecycleRule({
        Id: 'noncurrent-versions',
        Status: 'Enabled',
        ExpiredObjectDeleteMarker: true,
        NoncurrentVersionExpiration: { NoncurrentDays: 7 },
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 },
      }),
    ).toEqual({
      ID: 'noncurrent-versions',
      Status: 'Enabled',
      Filter: { Prefix: '' },
      Expiration: { ExpiredObjectDeleteMarker: true },
      NoncurrentVersionExpiration: { NoncurrentDays: 7 },
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: 2 },
    });
    expect(() =>
      s3LifecycleRule({ Id: 'x', Status: 'Enabled', Transitions: [] } as unknown as CfnLifecycleRule),
    ).toThrow(/x has Transitions, which the LocalStack deployment does not apply/);
  });
});
