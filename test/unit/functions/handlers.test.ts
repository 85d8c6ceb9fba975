// The Lambda entry points and the shared handlers on real SQS event fixtures (test/fixtures/events): cold
// start parses the environment, S3 test events are ignored, keys are decoded, and a batch of bad records is
// dead-lettered record by record with reasons.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SQSEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { readJson } from '#shared/pipeline/blob-json';
import { RunResources } from '#shared/pipeline/run-resources';
import { createStageHandler } from '#shared/pipeline/stages/handlers';
import { silentLog } from '#shared/ports/log';
import { ATTR } from '#shared/ports/queue';
import { RunStatusSchema } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';

const fixture = (name: string): SQSEvent =>
  JSON.parse(readFileSync(join(import.meta.dirname, '../../fixtures/events', name), 'utf8')) as SQSEvent;

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
  vi.resetModules();
});

function embedded() {
  const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-fn-')));
  const dlq = new EmbeddedQueue({ name: 'dlq', visibilityTimeoutSec: 30 });
  const submitted: string[] = [];
  const base = {
    blobs,
    queues: {},
    deadLetter: dlq,
    log: silentLog,
    now: () => new Date('2025-03-01T12:00:00Z'),
  };
  return { blobs, dlq, submitted, base };
}

describe('functions/<stage>/index.ts cold start', () => {
  it('fails at import, naming every missing variable', async () => {
    for (const k of Object.keys(process.env)) if (k.startsWith('TOOLRL_')) delete process.env[k];
    await expect(import('#functions/feeder/index')).rejects.toThrow(
      /function feeder is misconfigured:[\s\S]*TOOLRL_BUCKET[\s\S]*TOOLRL_DLQ_URL_POLICY_EVENTS[\s\S]*TOOLRL_QUEUE_URL_ROLLOUT/,
    );
  });

  it('loads with its environment and ignores the S3 test event without touching AWS', async () => {
    Object.assign(process.env, {
      [FUNCTION_ENV.bucket]: 'toolrl-dev-123456789012-us-east-1',
      [FUNCTION_ENV.queueUrl('rollout')]: 'http://127.0.0.1:9/000000000000/toolrl-dev-rollout',
      [FUNCTION_ENV.queueUrl('policy-events')]: 'http://127.0.0.1:9/000000000000/toolrl-dev-policy-events',
      [FUNCTION_ENV.deadLetterQueueUrl('policy-events')]:
        'http://127.0.0.1:9/000000000000/toolrl-dev-policy-events-dlq',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:9',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
    const { handler } = await import('#functions/feeder/index');
    expect(await handler(fixture('run-event-s3-test-event.json'))).toEqual({ batchItemFailures: [] });
  });
});

describe('run-starter handler', () => {
  it('ignores s3:TestEvent', async () => {
    const { blobs, base, submitted } = embedded();
    const handler = createStageHandler('run-starter', {
      ...base,
      learnerJobs: {
        submit: async (r) => {
          submitted.push(r.runId);
          return { jobId: 'x' };
        },
      },
    });
    expect(await handler(fixture('run-event-s3-test-event.json'))).toEqual({ batchItemFailures: [] });
    expect(await blobs.list('runs/')).toEqual([]);
    expect(submitted).toEqual([]);
  });

  it('decodes the key, and fails the run with a readable reason when the config is missing', async () => {
    const { blobs, base, submitted } = embedded();
    const handler = createStageHandler('run-starter', {
      ...base,
      learnerJobs: {
        submit: async (r) => {
          submitted.push(r.runId);
          return { jobId: 'x' };
        },
      },
    });
    expect(await handler(fixture('run-event-object-created.json'))).toEqual({ batchItemFailures: [] });
    const run = await readJson(blobs, keys.runJson('my-run'), RunStatusSchema);
    expect(run?.value).toMatchObject({
      runId: 'my-run',
      status: 'failed',
      reason: expect.stringMatching(
        /^runs\/my-run\/input\/config\.yaml is missing: upload the run config before the dataset/,
      ),
    });
    expect(submitted).toEqual([]);
    // The same event again (at-least-once) starts nothing and changes nothing.
    const etag = (await blobs.head(keys.runJson('my-run')))?.etag;
    await handler(fixture('run-event-object-created.json'));
    expect((await blobs.head(keys.runJson('my-run')))?.etag).toBe(etag);
  });
});

describe('reward handler', () => {
  it('dead-letters each malformed record with its own reason and reports no batch failure', async () => {
    const { blobs, base, dlq } = embedded();
    const handler = createStageHandler('reward', {
      ...base,
      resources: new RunResources(blobs, { scratchDir: tmpdir() }),
    });
    expect(await handler(fixture('reward-batch-with-poison.json'))).toEqual({ batchItemFailures: [] });
    const dead = dlq.browse();
    expect(dead.map((m) => m.attributes[ATTR.deadLetterReason])).toEqual([
      expect.stringMatching(/^BadMessageError: reward: invalid message:[\s\S]*trajectory/),
      expect.stringMatching(/^BadMessageError: message body is not JSON/),
    ]);
    expect(dead.map((m) => m.attributes[ATTR.sourceQueue])).toEqual([
      'arn:aws:sqs:us-east-1:123456789012:toolrl-dev-reward',
      'arn:aws:sqs:us-east-1:123456789012:toolrl-dev-reward',
    ]);
  });
});

describe('the stage table (shared/topology.ts FUNCTIONS)', () => {
  it('gives every stage a Lambda entry, a queue handler, and its group messages a dead-letter stage', async () => {
    const { DeadLetterStageSchema } = await import('#shared/schemas/dead-letter');
    const { createStageHandlers } = await import('#shared/pipeline/stages/handlers');
    const { FUNCTION_NAMES, FUNCTIONS } = await import('#shared/topology');
    const { existsSync } = await import('node:fs');
    const { base } = embedded();
    const contexts = Object.fromEntries(FUNCTION_NAMES.map((fn) => [fn, base])) as never;
    expect(Object.keys(createStageHandlers(contexts))).toEqual(FUNCTION_NAMES);
    for (const fn of FUNCTION_NAMES)
      expect(existsSync(join(import.meta.dirname, '../../../functions', fn, 'index.ts'))).toBe(true);
    expect(DeadLetterStageSchema.options).toEqual([
      ...FUNCTION_NAMES.filter((fn) => FUNCTIONS[fn].groupMessages),
      'learner',
    ]);
    expect(DeadLetterStageSchema.options).toEqual(['rollout', 'tool-call', 'reward', 'learner']);
  });
});
