// The AWS SDK clients' options: real AWS gets the SDK's defaults (virtual-hosted S3), an explicit endpoint
// (LocalStack) gets path-style S3 and SQS calls sent to that endpoint rather than to the queue URL's host.
import { describe, expect, it } from 'vitest';
import { awsClientOptionsFromEnv, s3Client, sqsClient } from '#shared/adapters/aws/clients';

const endpointOf = async (c: {
  config: { endpoint?: () => Promise<{ hostname: string; port?: number }> };
}) => {
  const e = await c.config.endpoint?.();
  return e ? `${e.hostname}:${e.port}` : undefined;
};

describe('AWS clients', () => {
  it('addresses S3 virtual-hosted style on AWS (no endpoint)', async () => {
    const c = s3Client({ region: 'eu-west-3' });
    expect(c.config.forcePathStyle).toBe(false);
    expect(await c.config.region()).toBe('eu-west-3');
    expect(await endpointOf(c)).toBeUndefined();
  });

  it('addresses S3 path style at an explicit endpoint (LocalStack has no per-bucket host names)', async () => {
    const c = s3Client({ endpoint: 'http://127.0.0.1:4599', region: 'us-east-1' });
    expect(c.config.forcePathStyle).toBe(true);
    expect(await endpointOf(c)).toBe('127.0.0.1:4599');
  });

  it('sends SQS calls to the explicit endpoint, not to the host written in the queue URL', async () => {
    const local = sqsClient({ endpoint: 'http://127.0.0.1:4599', region: 'us-east-1' });
    expect(local.config.useQueueUrlAsEndpoint).toBe(false);
    expect(await endpointOf(local)).toBe('127.0.0.1:4599');
    const aws = sqsClient({ region: 'eu-west-3' });
    expect(aws.config.useQueueUrlAsEndpoint).toBe(true);
  });

  it('creates one client per endpoint and region', () => {
    expect(s3Client({ region: 'ap-south-1' })).toBe(s3Client({ region: 'ap-south-1' }));
    expect(s3Client({ region: 'ap-south-1' })).not.toBe(s3Client({ region: 'ap-south-2' }));
  });

  it('reads the endpoint (the S3-specific one first) and the region from the environment', () => {
    expect(awsClientOptionsFromEnv({})).toEqual({});
    expect(
      awsClientOptionsFromEnv({
        AWS_ENDPOINT_URL: 'http://a:1',
        AWS_ENDPOINT_URL_S3: 'http://b:2',
        AWS_DEFAULT_REGION: 'us-west-2',
      }),
    ).toEqual({ endpoint: 'http://b:2', region: 'us-west-2' });
    expect(awsClientOptionsFromEnv({ AWS_REGION: 'eu-north-1', AWS_DEFAULT_REGION: 'us-west-2' })).toEqual({
      region: 'eu-north-1',
    });
  });
});
