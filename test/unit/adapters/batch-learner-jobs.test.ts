// The Batch adapter without a fake Batch: a real BatchClient whose whole middleware stack (serialisation, SigV4
// signing, retries, deserialisation) runs, with only the HTTP exchange answered here as Batch answers it
// (LocalStack's community edition has no Batch). What is checked is the request Batch would receive.
import { BatchClient } from '@aws-sdk/client-batch';
import { describe, expect, it } from 'vitest';
import { BatchLearnerJobs, learnerJobName } from '#shared/adapters/aws/batch-learner-jobs';
import type { RunStatus } from '#shared/schemas/run-status';

interface Sent {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

/** A BatchClient that records each HTTP request and answers it from `answer(path)`. */
function batchClient(answer: (path: string, body: Record<string, unknown>) => unknown) {
  const sent: Sent[] = [];
  const client = new BatchClient({
    region: 'eu-west-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' },
    requestHandler: {
      async handle(request: {
        method: string;
        path: string;
        headers: Record<string, string>;
        body?: unknown;
      }) {
        const text =
          request.body instanceof Uint8Array
            ? new TextDecoder().decode(request.body)
            : String(request.body ?? '{}');
        const body = JSON.parse(text) as Record<string, unknown>;
        sent.push({ method: request.method, path: request.path, headers: request.headers, body });
        return {
          response: {
            statusCode: 200,
            headers: { 'content-type': 'application/json' },
            body: new TextEncoder().encode(JSON.stringify(answer(request.path, body))),
          },
        };
      },
      updateHttpClientConfig() {},
      httpHandlerConfigs: () => ({}),
    } as never,
  });
  return { client, sent };
}

const run = { runId: 'quickstart-20250101-120000' } as RunStatus;
const jobs = (client: BatchClient) =>
  new BatchLearnerJobs(
    client,
    'arn:aws:batch:eu-west-1:123456789012:job-queue/toolrl-dev-learner',
    'toolrl-dev-learner',
    {
      WANDB_MODE: 'offline',
    },
  );

describe('BatchLearnerJobs (the SDK stack, the HTTP answered as Batch)', () => {
  it("looks the job up by name, then submits it with the run id and the environment's settings", async () => {
    const { client, sent } = batchClient((path) =>
      path === '/v1/listjobs'
        ? { jobSummaryList: [] }
        : { jobId: 'job-1', jobName: learnerJobName(run.runId), jobArn: 'arn' },
    );
    expect(await jobs(client).submit(run)).toEqual({ jobId: 'job-1' });
    expect(sent.map((s) => `${s.method} ${s.path}`)).toEqual(['POST /v1/listjobs', 'POST /v1/submitjob']);
    expect(sent[0]!.body).toEqual({
      jobQueue: 'arn:aws:batch:eu-west-1:123456789012:job-queue/toolrl-dev-learner',
      filters: [{ name: 'JOB_NAME', values: ['toolrl-learner-quickstart-20250101-120000'] }],
    });
    expect(sent[1]!.body).toEqual({
      jobName: 'toolrl-learner-quickstart-20250101-120000',
      jobQueue: 'arn:aws:batch:eu-west-1:123456789012:job-queue/toolrl-dev-learner',
      jobDefinition: 'toolrl-dev-learner',
      parameters: { runId: 'quickstart-20250101-120000' },
      containerOverrides: {
        environment: [
          { name: 'TOOLRL_RUN_ID', value: 'quickstart-20250101-120000' },
          { name: 'WANDB_MODE', value: 'offline' },
        ],
      },
    });
    // signed by the SDK's own SigV4 middleware, for Batch in the client's region
    expect(sent[1]!.headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/batch\/aws4_request/,
    );
  });

  it("reuses a live job of the run's name instead of submitting a second learner", async () => {
    const { client, sent } = batchClient(() => ({
      jobSummaryList: [{ jobId: 'job-0', jobName: learnerJobName(run.runId), status: 'RUNNING' }],
    }));
    expect(await jobs(client).submit(run)).toEqual({ jobId: 'job-0' });
    expect(sent.map((s) => s.path)).toEqual(['/v1/listjobs']);
  });

  it('submits anew when the only job of that name has FAILED', async () => {
    const { client, sent } = batchClient((path) =>
      path === '/v1/listjobs'
        ? { jobSummaryList: [{ jobId: 'job-0', jobName: learnerJobName(run.runId), status: 'FAILED' }] }
        : { jobId: 'job-2', jobName: learnerJobName(run.runId), jobArn: 'arn' },
    );
    expect(await jobs(client).submit(run)).toEqual({ jobId: 'job-2' });
    expect(sent.map((s) => s.path)).toEqual(['/v1/listjobs', '/v1/submitjob']);
  });

  it('names a job after its run within Batch’s 128 characters and alphabet', () => {
    expect(learnerJobName('a.b/c')).toBe('toolrl-learner-a-b-c');
    expect(learnerJobName('x'.repeat(200))).toHaveLength(128);
  });
});
