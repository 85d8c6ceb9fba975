// Builds one environment's stacks into an app: the stateful storage stack, the stateless pipeline stack on
// top of it, and cdk-nag's AwsSolutions checks run as a synth-time validation over both.

import { type App, Tags, Validations } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stackName } from '#shared/deployment/names';
import { retainFrameworkFunctionLogs } from './framework-logs.ts';
import { acknowledgeFrameworkResources } from './nag-acknowledgements.ts';
import { PipelineStack, type PipelineStackProps } from './pipeline-stack.ts';
import { parseEnvSettings } from './settings.ts';
import { StorageStack } from './storage-stack.ts';

export const ENVIRONMENTS_CONTEXT_KEY = 'toolrl:environments';

export interface ToolrlStacks {
  readonly storage: StorageStack;
  readonly pipeline: PipelineStack;
}

export function addEnvironment(
  app: App,
  envName: string,
  opts: { nag?: boolean; testOverrides?: PipelineStackProps['testOverrides'] } = {},
): ToolrlStacks {
  const settings = parseEnvSettings(envName, app.node.tryGetContext(ENVIRONMENTS_CONTEXT_KEY));
  const env = {
    account: settings.account ?? process.env.CDK_DEFAULT_ACCOUNT,
    region: settings.region ?? process.env.CDK_DEFAULT_REGION,
  };
  const storage = new StorageStack(app, stackName(envName, 'storage'), {
    env,
    envName,
    settings,
    description: `toolrl ${envName}: data bucket and operator secrets (retained on deletion)`,
    terminationProtection: envName === 'prod',
  });
  const pipeline = new PipelineStack(app, stackName(envName, 'pipeline'), {
    env,
    envName,
    settings,
    toolApiKeys: storage.secrets.toolApiKeys,
    wandbSecret: storage.secrets.wandb,
    description: `toolrl ${envName}: queues, stage functions, GPU learner, alarms and dashboard`,
    testOverrides: opts.testOverrides,
  });
  pipeline.addStackDependency(storage, 'the pipeline uses the bucket by name');
  for (const stack of [storage, pipeline]) {
    Tags.of(stack).add('project', 'toolrl');
    Tags.of(stack).add('environment', envName);
    retainFrameworkFunctionLogs(stack, settings.logRetentionDays as logs.RetentionDays);
  }
  acknowledgeFrameworkResources(pipeline);
  if (opts.nag ?? true) Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  return { storage, pipeline };
}
