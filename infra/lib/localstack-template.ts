// The environment's storage and queues as the CDK app synthesizes them, as one template LocalStack's
// CloudFormation deploys: the data bucket and its access-log bucket with their policies (storage stack), every
// queue and dead-letter queue with its redrive and queue policy, and the upload notifications (pipeline stack).
// Lambda functions, Batch, alarms and the dashboard are left out: LocalStack in host mode cannot run them.
// infra/lib/localstack-stack.ts deploys it (the e2e suite, `bash scripts/localstack.sh deploy ENV`). One change is
// made: CDK writes a bucket's notifications through a custom resource backed by a Lambda function, which needs
// Docker under LocalStack, so they become the bucket's own NotificationConfiguration (the same rules: queue,
// events, prefix and suffix filters). Nothing else is created outside CloudFormation.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, Stack, Validations } from 'aws-cdk-lib';
import * as ecr from 'aws-cdk-lib/aws-ecr';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { assertEnvName, queueName } from '#shared/deployment/names';
import { QUEUES, type QueueName } from '#shared/topology';
import { REPO_ROOT } from './docker-context.ts';
import { addEnvironment, ENVIRONMENTS_CONTEXT_KEY } from './toolrl-app.ts';

export interface CfnTemplate {
  AWSTemplateFormatVersion?: string;
  Description?: string;
  Resources: Record<string, CfnResource>;
}

export interface CfnResource {
  Type: string;
  Properties?: Record<string, unknown>;
  DependsOn?: string | string[];
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
  Metadata?: unknown;
}

/** What is deployed on LocalStack, by stack: everything of these types, and nothing else. */
const KEPT: Record<'storage' | 'pipeline', readonly string[]> = {
  storage: ['AWS::S3::Bucket', 'AWS::S3::BucketPolicy'],
  pipeline: ['AWS::SQS::Queue', 'AWS::SQS::QueuePolicy'],
};
const NOTIFICATIONS = 'Custom::S3BucketNotifications';

/** Synthesizes environment `envName` (cdk.json's settings, bundling and image builds skipped). */
export function synthesize(envName: string): { storage: CfnTemplate; pipeline: CfnTemplate } {
  const cdkJson = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
    context: Record<string, unknown>;
  };
  const outdir = mkdtempSync(join(tmpdir(), 'toolrl-synth-'));
  try {
    const app = new App({
      outdir,
      context: { ...cdkJson.context, 'aws:cdk:bundling-stacks': [] },
    });
    if (!app.node.tryGetContext(ENVIRONMENTS_CONTEXT_KEY)?.[envName]) {
      // A test environment (e2e1a2b3c4d) takes the settings of `dev`: only names differ.
      const envs = app.node.tryGetContext(ENVIRONMENTS_CONTEXT_KEY) as Record<string, unknown>;
      app.node.setContext(ENVIRONMENTS_CONTEXT_KEY, { ...envs, [envName]: envs.dev });
    }
    // The images of functions this template leaves out are never built: name an image instead of staging one.
    const holder = new Stack(app, 'NotDeployed');
    Validations.of(holder).acknowledge({
      id: 'CloudFormation-Validate::F0001',
      reason: 'Holds only the name of an image that is never built; it is not deployed.',
    });
    const noImage = lambda.DockerImageCode.fromEcr(
      ecr.Repository.fromRepositoryName(holder, 'NoImage', 'toolrl-not-built'),
    );
    const stacks = addEnvironment(app, envName, {
      nag: false,
      testOverrides: {
        learnerImage: ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/python:3.11-slim'),
        imageCode: { 'container-rollout': noImage, 'container-tool-call': noImage },
      },
    });
    const assembly = app.synth();
    const template = (name: string) => assembly.getStackByName(name).template as CfnTemplate;
    return { storage: template(stacks.storage.stackName), pipeline: template(stacks.pipeline.stackName) };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

/**
 * The storage and queue resources of both stacks as one template, notifications made the bucket's own. Synthesized
 * afresh each call (a few seconds), so it is always what `cdk deploy` would create from this checkout.
 */
export function localStackTemplate(envName: string): CfnTemplate {
  const { storage, pipeline } = synthesize(envName);
  const resources: Record<string, CfnResource> = {};
  const take = (from: CfnTemplate, types: readonly string[]) => {
    for (const [id, r] of Object.entries(from.Resources))
      if (types.includes(r.Type)) {
        if (resources[id]) throw new Error(`logical id ${id} is in both stacks`);
        // Deleting the LocalStack stack deletes everything (the real bucket is retained on AWS).
        const { DeletionPolicy: _d, UpdateReplacePolicy: _u, Metadata: _m, ...rest } = r;
        resources[id] = rest;
      }
  };
  take(storage, KEPT.storage);
  take(pipeline, KEPT.pipeline);
  const dataBucket = findDataBucket(resources, envName);
  const notifications = Object.values(pipeline.Resources).filter((r) => r.Type === NOTIFICATIONS);
  if (notifications.length !== 1)
    throw new Error(`expected one ${NOTIFICATIONS} in the pipeline stack, found ${notifications.length}`);
  const bucket = resources[dataBucket]!;
  bucket.Properties = {
    ...bucket.Properties,
    NotificationConfiguration: bucketNotifications(notifications[0]!.Properties ?? {}),
  };
  // The bucket's notifications name the queues; S3 checks the queues' policies let it send.
  bucket.DependsOn = Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::SQS::QueuePolicy')
    .map(([id]) => id);
  assertSelfContained(resources);
  return {
    AWSTemplateFormatVersion: '2010-09-09',
    Description: `toolrl ${envName}: storage and queues of the synthesized stacks, for LocalStack`,
    Resources: resources,
  };
}

/** The data bucket: the one whose name is the environment's (`toolrl-<env>-<account>-<region>`). */
function findDataBucket(resources: Record<string, CfnResource>, envName: string): string {
  const ids = Object.entries(resources)
    .filter(
      ([, r]) =>
        r.Type === 'AWS::S3::Bucket' &&
        JSON.stringify(r.Properties?.BucketName ?? '').includes(`toolrl-${envName}-`),
    )
    .map(([id]) => id);
  if (ids.length !== 1)
    throw new Error(`expected one data bucket named toolrl-${envName}-..., found ${ids.length}`);
  return ids[0]!;
}

interface CustomQueueConfiguration {
  QueueArn: unknown;
  Events: string[];
  Filter?: { Key?: { FilterRules?: { Name: string; Value: string }[] } };
}

/** The custom resource's PutBucketNotificationConfiguration input, as CloudFormation's bucket property. */
export function bucketNotifications(custom: Record<string, unknown>): Record<string, unknown> {
  const config = custom.NotificationConfiguration as { QueueConfigurations?: CustomQueueConfiguration[] };
  const queues = config.QueueConfigurations ?? [];
  if (queues.length === 0) throw new Error('the notifications name no queue');
  return {
    QueueConfigurations: queues.flatMap((q) =>
      q.Events.map((event) => ({
        Event: event,
        Queue: q.QueueArn,
        ...(q.Filter?.Key?.FilterRules
          ? {
              Filter: {
                S3Key: {
                  Rules: q.Filter.Key.FilterRules.map((r) => ({
                    Name: r.Name.toLowerCase(),
                    Value: r.Value,
                  })),
                },
              },
            }
          : {}),
      })),
    ),
  };
}

/** Every Ref and Fn::GetAtt names a resource of the template (or a pseudo parameter): nothing was left behind. */
function assertSelfContained(resources: Record<string, CfnResource>): void {
  const missing = new Set<string>();
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === 'Ref' && typeof x === 'string' && !x.startsWith('AWS::') && !resources[x]) missing.add(x);
        if (k === 'Fn::GetAtt' && Array.isArray(x) && !resources[x[0] as string]) missing.add(String(x[0]));
        visit(x);
      }
    }
  };
  for (const r of Object.values(resources)) visit(r.Properties);
  if (missing.size > 0)
    throw new Error(
      `the LocalStack template refers to resources it does not have: ${[...missing].join(', ')}`,
    );
}

/**
 * The template of environment `from` as environment `to` would synthesize: every whole-word occurrence of the
 * name (queue and bucket names, tags, the description) replaced. Synthesis takes seconds to a minute on a busy
 * machine, so the e2e suite synthesizes once and renames per scenario; a test environment's settings are
 * `dev`'s whatever its name (see synthesize), so only names differ, and test/e2e/template.test.ts holds a
 * renamed template equal to a fresh synthesis.
 */
export function renameEnvironment(template: CfnTemplate, from: string, to: string): CfnTemplate {
  // Word boundaries: `dev` must not touch `device`; env names are [a-z0-9] and sit between `-` or quotes.
  const word = new RegExp(`(?<![a-z0-9])${assertEnvName(from)}(?![a-z0-9])`, 'g');
  assertEnvName(to);
  return JSON.parse(JSON.stringify(template), (_k, v: unknown) =>
    typeof v === 'string' ? v.replace(word, to) : v,
  ) as CfnTemplate;
}

/**
 * The template with other visibility timeouts on the named queues of environment `env` (the e2e suite's, which
 * let a killed worker's messages come back within a test); redrive, retention and everything else unchanged.
 */
export function withVisibilityTimeouts(
  template: CfnTemplate,
  env: string,
  timeouts: Partial<Record<QueueName, number>>,
): CfnTemplate {
  const out = structuredClone(template);
  for (const [name, sec] of Object.entries(timeouts) as [QueueName, number][]) {
    if (!QUEUES[name]) throw new Error(`no queue ${name} in the topology`);
    const physical = queueName(env, name);
    const queue = Object.values(out.Resources).find(
      (r) => r.Type === 'AWS::SQS::Queue' && r.Properties?.QueueName === physical,
    );
    if (!queue) throw new Error(`the template has no queue named ${physical}`);
    queue.Properties = { ...queue.Properties, VisibilityTimeout: sec };
  }
  return out;
}
