// The stateful stack: the data bucket's protections and lifecycle, its access logs, the operator secrets.
import { Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { build } from './app.ts';

describe('storage stack', () => {
  it('blocks public access, states SSE-S3 encryption, versions objects and is retained on deletion', () => {
    // GIVEN the dev environment  WHEN it is synthesized
    const { storageTemplate: t } = build();
    // THEN the data bucket has every protection, named toolrl-dev-<account>-<region>
    t.hasResource('AWS::S3::Bucket', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: Match.objectLike({
        BucketName: {
          'Fn::Join': ['', ['toolrl-dev-', { Ref: 'AWS::AccountId' }, '-', { Ref: 'AWS::Region' }]],
        },
        PublicAccessBlockConfiguration: {
          BlockPublicAcls: true,
          BlockPublicPolicy: true,
          IgnorePublicAcls: true,
          RestrictPublicBuckets: true,
        },
        BucketEncryption: {
          ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }],
        },
        VersioningConfiguration: { Status: 'Enabled' },
        LoggingConfiguration: Match.objectLike({ LogFilePrefix: 'data/' }),
      }),
    });
  });

  it('denies requests without TLS (or below TLS 1.2) in the bucket policy', () => {
    const { storageTemplate: t } = build();
    t.hasResourceProperties('AWS::S3::BucketPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
          Match.objectLike({
            Effect: 'Deny',
            Action: 's3:*',
            Condition: { NumericLessThan: { 's3:TlsVersion': 1.2 } },
          }),
        ]),
      },
    });
  });

  it("expires tagged trajectories after the environment's trajectoryExpirationDays", () => {
    // GIVEN dev keeps trajectories 30 days and prod 90 (cdk.json)
    const dev = build().storageTemplate;
    const prod = build({ env: 'prod' }).storageTemplate;
    const rule = (days: number) => ({
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({
            Id: 'expire-trajectories',
            Status: 'Enabled',
            ExpirationInDays: days,
            TagFilters: [{ Key: 'toolrl-lifecycle', Value: 'trajectory' }],
          }),
        ]),
      },
    });
    dev.hasResourceProperties('AWS::S3::Bucket', rule(30));
    prod.hasResourceProperties('AWS::S3::Bucket', rule(90));
  });

  it('creates the operator secrets retained, the W&B one with the key ECS injects', () => {
    const { storageTemplate: t } = build();
    t.hasResource('AWS::SecretsManager::Secret', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({ Name: 'toolrl/dev/tool-api-keys', SecretString: '{}' }),
    });
    const wandb = Object.values(
      t.findResources('AWS::SecretsManager::Secret', { Properties: { Name: 'toolrl/dev/wandb' } }),
    );
    expect(wandb).toHaveLength(1);
    expect(JSON.parse(wandb[0]!.Properties.SecretString)).toEqual({ WANDB_API_KEY: '' });
  });

  it('protects the prod storage stack from deletion, not dev', () => {
    expect(build({ env: 'prod' }).storage.terminationProtection).toBe(true);
    expect(build().storage.terminationProtection).toBe(false);
  });
});
