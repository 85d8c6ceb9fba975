// The bucket's S3 notifications from shared/topology.ts NOTIFICATIONS: a dataset upload to the run-events
// queue (it starts the run), a policy pointer or learner-state write to the policy-events queue. The bucket
// lives in the stateful stack, so it is imported here and CDK manages these notifications alone, leaving
// any others on the bucket in place.

import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3n from 'aws-cdk-lib/aws-s3-notifications';
import { Construct } from 'constructs';
import { NOTIFICATIONS, type QueueName } from '#shared/topology';
import type { QueuePair } from './toolrl-function.ts';

export interface UploadNotificationsProps {
  /** The data bucket, imported into this stack. */
  readonly bucket: s3.IBucket;
  readonly queues: Readonly<Record<QueueName, QueuePair>>;
}

export class UploadNotifications extends Construct {
  constructor(scope: Construct, id: string, props: UploadNotificationsProps) {
    super(scope, id);
    for (const n of NOTIFICATIONS) {
      props.bucket.addEventNotification(
        s3.EventType.OBJECT_CREATED,
        new s3n.SqsDestination(props.queues[n.queue].queue),
        { prefix: n.prefix, suffix: n.suffix },
      );
    }
  }
}
