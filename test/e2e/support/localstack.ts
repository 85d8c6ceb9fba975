// The LocalStack the e2e suite talks to (started by scripts/e2e.sh): its endpoint, a health check that fails
// loudly and fast when it is not up, and the client options every helper uses.
import type { AwsClientOptions } from '#shared/adapters/aws/clients';

export function localstack(): AwsClientOptions & { endpoint: string } {
  const endpoint = process.env.AWS_ENDPOINT_URL;
  if (!endpoint)
    throw new Error(
      'AWS_ENDPOINT_URL is not set: run the e2e suite with `npm run test:e2e` (scripts/e2e.sh)',
    );
  return { endpoint, region: process.env.AWS_REGION ?? 'us-east-1' };
}

/**
 * Throws within a few seconds, naming the endpoint, unless LocalStack answers with S3, SQS, STS and the
 * CloudFormation and IAM that deploy each test's environment.
 */
export async function assertLocalStackUp(): Promise<void> {
  const { endpoint } = localstack();
  let body: { services?: Record<string, string> };
  try {
    const r = await fetch(`${endpoint}/_localstack/health`, { signal: AbortSignal.timeout(5000) });
    body = (await r.json()) as typeof body;
  } catch (err) {
    throw new Error(
      `LocalStack is not reachable at ${endpoint} (${(err as Error).message}); start it with ` +
        '`bash scripts/localstack.sh start`, or run the suite with `npm run test:e2e`, which does',
    );
  }
  for (const svc of ['s3', 'sqs', 'sts', 'cloudformation', 'iam'])
    if (!['running', 'available'].includes(body.services?.[svc] ?? ''))
      throw new Error(
        `LocalStack at ${endpoint} has ${svc} ${body.services?.[svc] ?? 'missing'}; restart it with ` +
          '`bash scripts/localstack.sh stop && bash scripts/localstack.sh start`, which enables it',
      );
}
