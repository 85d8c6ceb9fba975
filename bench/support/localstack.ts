// LocalStack for the benchmarks that run on it (bench/pipeline/localstack.ts, bench/pipeline/quickstart.ts): its
// endpoint, started when it is not up, the requests its own log says it served, and an environment deployed from
// the CDK template.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AwsClientOptions } from '#shared/adapters/aws/clients';
import { SqsQueue } from '#shared/adapters/aws/sqs-queue';
import type { EnvironmentResources } from '#shared/operator/environment';
import { deployLocalStackEnvironment } from '../../infra/lib/localstack-stack.ts';
import { type CfnTemplate, localStackTemplate } from '../../infra/lib/localstack-template.ts';

const REPO = join(import.meta.dirname, '../..');

/** LocalStack's endpoint; starts it (scripts/localstack.sh) when it is not up. Returns a stop for the end. */
export function ensureLocalStack(): { client: AwsClientOptions; stop: () => void } {
  process.env.AWS_ENDPOINT_URL ??= `http://127.0.0.1:${process.env.LOCALSTACK_PORT ?? 4566}`;
  process.env.AWS_ACCESS_KEY_ID ??= 'test';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'test';
  process.env.AWS_REGION ??= 'us-east-1';
  const script = join(REPO, 'scripts/localstack.sh');
  const running = spawnSync('bash', [script, 'status'], { stdio: 'ignore' }).status === 0;
  if (!running && spawnSync('bash', [script, 'start'], { stdio: 'inherit' }).status !== 0)
    throw new Error('LocalStack did not start (bash scripts/localstack.sh start)');
  return {
    client: { endpoint: process.env.AWS_ENDPOINT_URL, region: process.env.AWS_REGION },
    stop: () => {
      if (!running) spawnSync('bash', [script, 'stop'], { stdio: 'inherit' });
    },
  };
}

/** LocalStack's own log (scripts/localstack.sh writes it), where it logs every request it serves. */
export function localStackLog(): string | undefined {
  const port = new URL(process.env.AWS_ENDPOINT_URL ?? 'http://127.0.0.1:4566').port || '4566';
  const path = join(REPO, `.localstack/localstack-${port}.log`);
  return existsSync(path) ? path : undefined;
}

/** The S3 and SQS requests in LocalStack's log after byte `from`, by `service.Operation`. */
export function loggedRequests(path: string, from: number): Record<string, number> {
  const text = readFileSync(path).subarray(from).toString('utf8');
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/localstack\.request\.aws\s*: AWS ((?:s3|sqs)\.\w+) =>/g))
    out[m[1]!] = (out[m[1]!] ?? 0) + 1;
  return out;
}

/** The CDK app synthesized once per benchmark process; each environment deploys it under its own name. */
let synthesized: { env: string; template: CfnTemplate } | undefined;
/** A fresh environment from the template, through LocalStack's CloudFormation (as the e2e suite makes them). */
export function deployBenchEnvironment(client: AwsClientOptions): Promise<EnvironmentResources> {
  synthesized ??= { env: 'benchtmpl', template: localStackTemplate('benchtmpl') };
  const env = `bench${randomBytes(3).toString('hex')}`;
  return deployLocalStackEnvironment({ env, client, template: synthesized });
}

/** The reward stage's sends to scored-groups, counted (the run is done when every group's message is sent). */
export class CountingSqsQueue extends SqsQueue {
  sent = 0;
  override async sendBatch(entries: Parameters<SqsQueue['sendBatch']>[0]) {
    const ids = await super.sendBatch(entries);
    this.sent += entries.length;
    return ids;
  }
}
