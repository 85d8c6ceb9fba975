// The bucket's lifecycle rules expire objects by their `toolrl-lifecycle` tag (infra/lib/constructs/data-bucket.ts);
// here, on LocalStack's S3, the pipeline's writers tag trajectories and claim checks through every put variant of
// the S3 blob store, and leave the objects that must stay (inputs, policies, group manifests) untagged. The bucket
// is the template's, so the rules that read the tags are there too.
import { randomBytes } from 'node:crypto';
import {
  GetBucketLifecycleConfigurationCommand,
  GetObjectTaggingCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Client } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { LIFECYCLE_TAG_KEY } from '#shared/deployment/lifecycle';
import type { EnvironmentResources } from '#shared/operator/environment';
import { putJson, putJsonIfAbsent } from '#shared/pipeline/blob-json';
import { encodeMessage } from '#shared/pipeline/claim-check';
import { ClaimCheckEnvelopeSchema } from '#shared/schemas/messages/claim-check';
import { keys } from '#shared/topology';
import { deployTestEnvironment, destroyTestEnvironment } from './support/environment.ts';
import { localstack } from './support/localstack.ts';

let resources: EnvironmentResources;
let client: S3Client;
let store: S3BlobStore;

beforeAll(async () => {
  resources = await deployTestEnvironment('life');
  client = s3Client(localstack());
  store = new S3BlobStore(client, resources.bucket);
});
afterAll(() => destroyTestEnvironment(resources));

async function tags(key: string): Promise<Record<string, string>> {
  const r = await client.send(new GetObjectTaggingCommand({ Bucket: resources.bucket, Key: key }));
  return Object.fromEntries((r.TagSet ?? []).map((t) => [t.Key, t.Value]));
}

describe('lifecycle tags (LocalStack S3)', () => {
  it('tags a scored trajectory as the reward stage stores it (put-if-absent), and on put and put-if-match', async () => {
    // GIVEN a run's trajectory keys
    const runId = `r-${randomBytes(3).toString('hex')}`;
    const stored = keys.trajectory(runId, 'e0-p0', 0);
    const plain = keys.trajectory(runId, 'e0-p0', 1);

    // WHEN the reward stage's put-if-absent writes one, a put the other, and a put-if-match overwrites it
    expect((await putJsonIfAbsent(store, stored, { reward: 1 })).written).toBe(true);
    const { etag } = await putJson(store, plain, { reward: 0 });
    expect((await store.putIfMatch(plain, '{"reward": 0.5}', etag)).written).toBe(true);

    // THEN each carries the trajectory tag the bucket's expire-trajectories rule filters on
    expect(await tags(stored)).toEqual({ [LIFECYCLE_TAG_KEY]: 'trajectory' });
    expect(await tags(plain)).toEqual({ [LIFECYCLE_TAG_KEY]: 'trajectory' });
    const rules = await client.send(new GetBucketLifecycleConfigurationCommand({ Bucket: resources.bucket }));
    const filters = (rules.Rules ?? []).map((r) => r.Filter?.Tag ?? r.Filter?.And?.Tags?.[0]);
    expect(filters).toContainEqual({ Key: LIFECYCLE_TAG_KEY, Value: 'trajectory' });
    expect(filters).toContainEqual({ Key: LIFECYCLE_TAG_KEY, Value: 'claim-check' });
  });

  it('tags the object a message above the threshold is claim-checked into', async () => {
    // GIVEN a payload over a 16-byte threshold
    const runId = `r-${randomBytes(3).toString('hex')}`;

    // WHEN the stages encode it for a queue
    const body = await encodeMessage(store, runId, { bulky: 'x'.repeat(64) }, 16);

    // THEN the queue carries a claim check whose object is tagged for the expire-claim-checks rule
    const { key } = ClaimCheckEnvelopeSchema.parse(JSON.parse(body)).claimCheck;
    expect(key.startsWith(`runs/${runId}/messages/`)).toBe(true);
    expect(await tags(key)).toEqual({ [LIFECYCLE_TAG_KEY]: 'claim-check' });
  });

  it('leaves inputs, policy versions and group manifests untagged, so no rule expires them', async () => {
    const runId = `r-${randomBytes(3).toString('hex')}`;
    for (const key of [
      keys.config(runId),
      `${keys.policyVersion(runId, 1)}manifest.json`,
      keys.group(runId, 'e0-p0'),
    ]) {
      await store.putIfAbsent(key, '{}');
      expect(await tags(key), key).toEqual({});
    }
  });
});
