// Test helpers: a fresh app per test with cdk.json's context (feature flags and environments), optionally
// with one environment's settings changed, and the stacks of that environment.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';
import { addEnvironment, ENVIRONMENTS_CONTEXT_KEY, type ToolrlStacks } from '../../infra/lib/toolrl-app.ts';

const CDK_JSON = JSON.parse(readFileSync(join(REPO_ROOT, 'cdk.json'), 'utf8')) as {
  context: Record<string, unknown> & { [ENVIRONMENTS_CONTEXT_KEY]: Record<string, Record<string, unknown>> };
};

/** A deep copy of cdk.json's environments, for a test to edit. */
export function environments(): Record<string, Record<string, unknown>> {
  return structuredClone(CDK_JSON.context[ENVIRONMENTS_CONTEXT_KEY]);
}

export interface BuildOptions {
  env?: string;
  /** Edits the environments before the app reads them. */
  edit?: (envs: Record<string, Record<string, unknown>>) => void;
  /** Run cdk-nag as a validation plugin at synth (the real app does). */
  nag?: boolean;
  /** Stage the learner's real Docker build context instead of a registry image (slower). */
  realLearnerImage?: boolean;
}

export interface Built extends ToolrlStacks {
  readonly app: App;
  readonly storageTemplate: Template;
  readonly pipelineTemplate: Template;
}

/** Builds one environment in a fresh app; esbuild bundling is skipped (tests of bundling opt back in). */
export function build(opts: BuildOptions = {}): Built {
  const envs = environments();
  opts.edit?.(envs);
  const app = new App({
    context: { ...CDK_JSON.context, [ENVIRONMENTS_CONTEXT_KEY]: envs, 'aws:cdk:bundling-stacks': [] },
  });
  const stacks = addEnvironment(app, opts.env ?? 'dev', {
    nag: opts.nag ?? false,
    testOverrides: opts.realLearnerImage
      ? undefined
      : { learnerImage: ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/python:3.11-slim') },
  });
  // Templates are synthesized on first use, so a test can still add to the app before synth.
  return {
    app,
    ...stacks,
    get storageTemplate() {
      return Template.fromStack(stacks.storage);
    },
    get pipelineTemplate() {
      return Template.fromStack(stacks.pipeline);
    },
  };
}

/** The logical id of the one resource of `type` whose properties match `props` (throws unless exactly one). */
export function logicalId(template: Template, type: string, props: Record<string, unknown>): string {
  const found = Object.keys(template.findResources(type, { Properties: props }));
  if (found.length !== 1)
    throw new Error(`expected one ${type} matching ${JSON.stringify(props)}, found ${found.length}`);
  return found[0]!;
}
