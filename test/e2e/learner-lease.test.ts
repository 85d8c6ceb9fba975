// One learner per run on LocalStack's S3: the run-starter's lease is a conditional write (If-None-Match), so of
// eight starters handling the same upload at once exactly one submits the learner; the others retry and find
// its job. (Before, every starter that found run.json still `starting` submitted one.) The bucket is the one the
// template deploys.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Client } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import type { EnvironmentResources } from '#shared/operator/environment';
import { readJson } from '#shared/pipeline/blob-json';
import { LearnerLeaseSchema } from '#shared/pipeline/learner-lease';
import { RunStatusSchema } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';
import { concurrentStarts } from '../helpers/run-starts.ts';
import { deployTestEnvironment, destroyTestEnvironment } from './support/environment.ts';
import { localstack } from './support/localstack.ts';

let resources: EnvironmentResources;
let blobs: S3BlobStore;
beforeAll(async () => {
  resources = await deployTestEnvironment('lease');
  blobs = new S3BlobStore(s3Client(localstack()), resources.bucket);
});
afterAll(() => destroyTestEnvironment(resources));

describe('learner lease (LocalStack S3)', () => {
  it('eight concurrent starts of one run submit one learner', async () => {
    const r = await concurrentStarts(blobs, 'r-lease', 8);
    expect(r.submitted).toEqual(['job-1 for r-lease']);
    // the seven others met the lease while the first was submitting: each is retried and finds its job
    expect(r.firstRound.filter((x) => x === 'retry')).toHaveLength(7);
    expect(r.retried.every((x) => x === 'ok')).toBe(true);
    expect((await readJson(blobs, keys.runJson('r-lease'), RunStatusSchema))?.value).toMatchObject({
      status: 'running',
      learner: { jobId: 'job-1' },
    });
    expect((await readJson(blobs, keys.learnerLease('r-lease'), LearnerLeaseSchema))?.value.jobId).toBe(
      'job-1',
    );
  });
});
