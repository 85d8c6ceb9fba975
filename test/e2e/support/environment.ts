// An environment of the e2e suite's own: the synthesized template (global-setup.ts) deployed through LocalStack's
// CloudFormation under a fresh name, so files never see each other's messages; deleted with its stack after.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { EnvironmentResources } from '#shared/operator/environment';
import type { QueueName } from '#shared/topology';
import {
  deployLocalStackEnvironment,
  destroyLocalStackEnvironment,
} from '../../../infra/lib/localstack-stack.ts';
import { localstack } from './localstack.ts';

/**
 * Deploys `<prefix><random>` (11 characters, as the bootstrap's `e2e` + 8 hex were: scratch paths, and the sockets
 * under them, stay as long as before) with the given visibility timeouts, if any.
 */
export function deployTestEnvironment(
  prefix = 'e2e',
  visibilityTimeoutSec?: Partial<Record<QueueName, number>>,
): Promise<EnvironmentResources> {
  const env = `${prefix}${randomBytes(6).toString('hex')}`.slice(0, 11);
  return deployLocalStackEnvironment({
    env,
    client: localstack(),
    template: inject('localStackTemplate'),
    ...(visibilityTimeoutSec ? { visibilityTimeoutSec } : {}),
  });
}

export function destroyTestEnvironment(resources: EnvironmentResources | undefined): Promise<void> {
  return resources ? destroyLocalStackEnvironment(resources.env, localstack()) : Promise.resolve();
}
