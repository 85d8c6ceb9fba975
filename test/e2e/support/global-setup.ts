// Before any e2e file: LocalStack answers with every service the suite needs, and the CDK app is synthesized once
// into the LocalStack template (infra/lib/localstack-template.ts) that each file then deploys, renamed to an
// environment of its own (synthesis takes seconds to a minute on a busy machine; a deployment, a few seconds).
import type { TestProject } from 'vitest/node';
import { type CfnTemplate, localStackTemplate } from '../../../infra/lib/localstack-template.ts';
import { assertLocalStackUp } from './localstack.ts';

/** The name the template is synthesized under; every environment the suite deploys is a rename of it. */
export const TEMPLATE_ENV = 'e2etemplate';

declare module 'vitest' {
  export interface ProvidedContext {
    localStackTemplate: { env: string; template: CfnTemplate };
  }
}

export default async function setup(project: TestProject): Promise<void> {
  await assertLocalStackUp();
  project.provide('localStackTemplate', { env: TEMPLATE_ENV, template: localStackTemplate(TEMPLATE_ENV) });
}
