// The environment's one bucket (datasets, runs, policy versions, checkpoints) and the bucket that receives
// its access logs. Stateful: retained when the stack is deleted, and its construct ids must never change.

import { Aws, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { LIFECYCLE_TAG_KEY } from '#shared/deployment/lifecycle';
import { bucketName } from '#shared/deployment/names';

export interface DataBucketProps {
  readonly envName: string;
  readonly trajectoryExpirationDays: number;
  readonly noncurrentVersionExpirationDays: number;
  readonly accessLogExpirationDays: number;
}

/** Claim-checked message payloads must outlive the longest a message can wait: 14 days in a dead-letter queue. */
const CLAIM_CHECK_EXPIRATION_DAYS = 15;

export class DataBucket extends Construct {
  readonly bucket: s3.Bucket;
  readonly accessLogs: s3.Bucket;

  constructor(scope: Construct, id: string, props: DataBucketProps) {
    super(scope, id);
    const secure = {
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
    } as const;

    this.accessLogs = new s3.Bucket(this, 'AccessLogs', {
      ...secure,
      // Server access logging only delivers to SSE-S3 buckets with the log-delivery bucket policy.
      lifecycleRules: [
        { id: 'expire-access-logs', expiration: Duration.days(props.accessLogExpirationDays) },
      ],
    });
    Validations.of(this.accessLogs).acknowledge({
      id: 'AwsSolutions-S1',
      reason: 'This is the access-log bucket itself; logging it to itself would loop.',
    });

    this.bucket = new s3.Bucket(this, 'Bucket', {
      ...secure,
      bucketName: bucketName(props.envName, Aws.ACCOUNT_ID, Aws.REGION),
      // LATEST.json and run.json are overwritten in place; versions keep the history for a while.
      versioned: true,
      serverAccessLogsBucket: this.accessLogs,
      serverAccessLogsPrefix: 'data/',
      lifecycleRules: [
        {
          id: 'expire-trajectories',
          tagFilters: { [LIFECYCLE_TAG_KEY]: 'trajectory' },
          expiration: Duration.days(props.trajectoryExpirationDays),
        },
        {
          id: 'expire-claim-checks',
          tagFilters: { [LIFECYCLE_TAG_KEY]: 'claim-check' },
          expiration: Duration.days(CLAIM_CHECK_EXPIRATION_DAYS),
        },
        {
          id: 'noncurrent-versions',
          noncurrentVersionExpiration: Duration.days(props.noncurrentVersionExpirationDays),
          expiredObjectDeleteMarker: true,
          abortIncompleteMultipartUploadAfter: Duration.days(2),
        },
      ],
    });
  }
}
