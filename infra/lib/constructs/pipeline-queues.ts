// Every queue of the topology with its dead-letter queue: names, visibility timeouts, maxReceiveCount and
// retention come from shared/topology.ts, the same values the embedded runtime uses (LocalStack deploys this template).

import { Duration } from 'aws-cdk-lib';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { deadLetterQueueName, queueName } from '#shared/deployment/names';
import { QUEUES, type QueueName, type QueueSpec } from '#shared/topology';
import type { QueuePair } from './toolrl-function.ts';

/** SQS's maximum retention: a dead letter stays two weeks for a human to look at. */
const DLQ_RETENTION = Duration.days(14);

export class PipelineQueues extends Construct {
  readonly pairs: Readonly<Record<QueueName, QueuePair>>;

  constructor(scope: Construct, id: string, props: { envName: string }) {
    super(scope, id);
    const pairs = {} as Record<QueueName, QueuePair>;
    for (const spec of Object.values(QUEUES)) pairs[spec.name] = this.pair(props.envName, spec);
    this.pairs = pairs;
  }

  private pair(env: string, spec: QueueSpec): QueuePair {
    if (spec.maxReceiveCount < 5)
      throw new Error(
        `queue ${spec.name}: maxReceiveCount ${spec.maxReceiveCount} < 5 would dead-letter messages that were only throttled`,
      );
    const deadLetterQueue = new sqs.Queue(this, `${spec.name}-dlq`, {
      queueName: deadLetterQueueName(env, spec.name),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
    });
    const queue = new sqs.Queue(this, spec.name, {
      queueName: queueName(env, spec.name),
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(spec.visibilityTimeoutSec),
      retentionPeriod: Duration.seconds(spec.retentionSec),
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: spec.maxReceiveCount },
    });
    return { name: spec.name, queue, deadLetterQueue };
  }
}
