// The stateful stack: the data bucket and the operator's secrets. Kept apart from the pipeline so the
// pipeline can be destroyed and redeployed freely; everything here is retained on deletion.
import { Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { DataBucket } from './constructs/data-bucket.ts';
import { OperatorSecrets } from './constructs/operator-secrets.ts';
import type { EnvSettings } from './settings.ts';

export interface StorageStackProps extends StackProps {
  readonly envName: string;
  readonly settings: EnvSettings;
}

export class StorageStack extends Stack {
  readonly data: DataBucket;
  readonly secrets: OperatorSecrets;

  constructor(scope: Construct, id: string, props: StorageStackProps) {
    super(scope, id, props);
    const s = props.settings;
    this.data = new DataBucket(this, 'Data', {
      envName: props.envName,
      trajectoryExpirationDays: s.trajectoryExpirationDays,
      noncurrentVersionExpirationDays: s.noncurrentVersionExpirationDays,
      accessLogExpirationDays: Math.max(s.logRetentionDays, 30),
    });
    this.secrets = new OperatorSecrets(this, 'Secrets', { envName: props.envName });
  }
}
