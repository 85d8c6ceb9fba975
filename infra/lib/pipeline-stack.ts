// The stateless stack: queues, the five stage functions and the code runner, the S3 notifications that drive them, the learner
// on AWS Batch, alarms and the dashboard. It only composes constructs; destroying it loses no data.

import { Aws, Stack, type StackProps } from 'aws-cdk-lib';
import type * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';
import { bucketName } from '#shared/deployment/names';
import { LearnerJob } from './constructs/learner-job.ts';
import { LearnerMetrics } from './constructs/learner-metrics.ts';
import { PipelineAlarms } from './constructs/pipeline-alarms.ts';
import { PipelineDashboard } from './constructs/pipeline-dashboard.ts';
import { PipelineQueues } from './constructs/pipeline-queues.ts';
import { StageFunctions } from './constructs/stage-functions.ts';
import { UploadNotifications } from './constructs/upload-notifications.ts';
import type { EnvSettings } from './settings.ts';

export interface PipelineStackProps extends StackProps {
  readonly envName: string;
  readonly settings: EnvSettings;
  readonly toolApiKeys: secretsmanager.ISecret;
  readonly wandbSecret: secretsmanager.ISecret;
  /** Test seams: stand-ins for the container images, so a test need not stage their build contexts. */
  readonly testOverrides?: {
    readonly functionsDir?: string;
    readonly imageCode?: Partial<Record<'container-rollout' | 'container-tool-call', lambda.DockerImageCode>>;
    readonly learnerImage?: ecs.ContainerImage;
  };
}

export class PipelineStack extends Stack {
  readonly queues: PipelineQueues;
  readonly learner: LearnerJob;
  readonly functions: StageFunctions;
  readonly alarms: PipelineAlarms;

  constructor(scope: Construct, id: string, props: PipelineStackProps) {
    super(scope, id, props);
    const s = props.settings;
    const logRetention = s.logRetentionDays as logs.RetentionDays;

    // The bucket by its deterministic name, not a cross-stack reference: IAM policies and the CLI then name
    // it the same way, and the storage stack never has to change for this one.
    const bucket = s3.Bucket.fromBucketName(
      this,
      'Data',
      bucketName(props.envName, Aws.ACCOUNT_ID, Aws.REGION),
    );

    this.queues = new PipelineQueues(this, 'Queues', { envName: props.envName });
    const queues = this.queues.pairs;

    this.learner = new LearnerJob(this, 'Learner', {
      envName: props.envName,
      settings: s.learner,
      logRetention,
      bucket,
      scoredGroups: queues['scored-groups'],
      wandbSecret: props.wandbSecret,
      image: props.testOverrides?.learnerImage,
    });

    this.functions = new StageFunctions(this, 'Stages', {
      envName: props.envName,
      settings: s,
      logRetention,
      bucket,
      queues,
      toolApiKeys: props.toolApiKeys,
      learner: this.learner,
      functionsDir: props.testOverrides?.functionsDir,
      imageCode: props.testOverrides?.imageCode,
    });

    new UploadNotifications(this, 'Notifications', { bucket, queues });

    this.alarms = new PipelineAlarms(this, 'Alarms', {
      envName: props.envName,
      queues,
      oldestMessageAgeAlarmSec: s.oldestMessageAgeAlarmSec,
      alarmEmail: s.alarmEmail,
      learnerJobQueue: this.learner.jobQueue,
    });

    new PipelineDashboard(this, 'Dashboard', {
      envName: props.envName,
      queues,
      functions: [...Object.values(this.functions.stages), this.functions.codeRunner],
      learner: new LearnerMetrics(this, 'LearnerMetrics', {
        envName: props.envName,
        logGroup: this.learner.logGroup,
      }),
      alarms: [...this.alarms.deadLetterAlarms, ...this.alarms.ageAlarms],
      learnerFailures: this.alarms.learnerFailuresMetric,
    });
  }
}
