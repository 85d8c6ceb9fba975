// Physical names of one environment's resources. The CDK app (deployed to AWS or, as a template, to LocalStack)
// and the CLI all derive names from here, so `toolrl submit --env dev` finds what `cdk deploy -c env=dev` created.
import { dlqName, physicalQueueName, type QueueName } from '#shared/topology';

/** Lower-case letters and digits, starting with a letter: it becomes part of bucket and queue names. */
export const ENV_NAME_PATTERN = /^[a-z][a-z0-9]{0,11}$/;

export function assertEnvName(env: string): string {
  if (!ENV_NAME_PATTERN.test(env))
    throw new Error(
      `environment name ${JSON.stringify(env)} is invalid: use 1-12 lower-case letters or digits, starting with a letter (e.g. dev, prod)`,
    );
  return env;
}

/** One bucket per environment and account/region (bucket names are global). */
export const bucketName = (env: string, account: string, region: string): string =>
  `toolrl-${env}-${account}-${region}`;

export const stackName = (env: string, part: 'storage' | 'pipeline'): string => `toolrl-${env}-${part}`;

/** Secrets Manager names; the values are put by the operator (see infra/DEPLOY.md), never by the stack. */
export const secretName = (env: string, which: 'tool-api-keys' | 'wandb'): string => `toolrl/${env}/${which}`;

export const queueName = (env: string, q: QueueName): string => physicalQueueName(env, q);
export const deadLetterQueueName = (env: string, q: QueueName): string => physicalQueueName(env, dlqName(q));

/** The learner's AWS Batch job queue and job definition. */
export const learnerJobQueueName = (env: string): string => `toolrl-${env}-learner`;
export const learnerJobDefinitionName = (env: string): string => `toolrl-${env}-learner`;
