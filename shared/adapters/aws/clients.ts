// AWS SDK v3 clients, created once per process. With AWS_ENDPOINT_URL (LocalStack) S3 is addressed
// path-style and SQS is given the endpoint explicitly: otherwise the SQS client sends each call to the host
// in the queue URL, which LocalStack may write differently from the address it is reached at.
// Every client has connection and request timeouts: the SDK's defaults have none, so an endpoint that accepts
// connections and never answers (a wedged LocalStack, a black-holed route) would hang a command or a stage.
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { AWS_MAX_SOCKETS, AWS_TIMEOUTS, httpHandlerOptions } from '#shared/deployment/aws-http';

export { AWS_MAX_SOCKETS, AWS_TIMEOUTS, httpHandlerOptions };

/** The common configuration of a client: region, endpoint (LocalStack) and the timeouts. */
export function awsClientConfig(opts: AwsClientOptions, requestMs?: number) {
  return {
    ...(opts.region ? { region: opts.region } : {}),
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    ...httpHandlerOptions(requestMs),
  };
}

export interface AwsClientOptions {
  /** e.g. http://127.0.0.1:4566 (LocalStack); undefined for real AWS. */
  readonly endpoint?: string;
  readonly region?: string;
}

const s3Clients = new Map<string, S3Client>();
const sqsClients = new Map<string, SQSClient>();

export function awsClientOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): AwsClientOptions {
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  return { ...(endpoint ? { endpoint } : {}), ...(region ? { region } : {}) };
}

export function s3Client(opts: AwsClientOptions = awsClientOptionsFromEnv()): S3Client {
  const id = `${opts.endpoint ?? ''}|${opts.region ?? ''}`;
  let c = s3Clients.get(id);
  if (!c) {
    c = new S3Client({
      ...awsClientConfig(opts),
      // Virtual-hosted style (bucket.s3.region.amazonaws.com) on AWS, where path style is deprecated; a local
      // endpoint has no per-bucket host names, so there the bucket goes in the path.
      ...(opts.endpoint ? { forcePathStyle: true } : {}),
    });
    s3Clients.set(id, c);
  }
  return c;
}

export function sqsClient(opts: AwsClientOptions = awsClientOptionsFromEnv()): SQSClient {
  const id = `${opts.endpoint ?? ''}|${opts.region ?? ''}`;
  let c = sqsClients.get(id);
  if (!c) {
    c = new SQSClient({
      ...awsClientConfig(opts),
      ...(opts.endpoint ? { useQueueUrlAsEndpoint: false } : {}),
    });
    sqsClients.set(id, c);
  }
  return c;
}
