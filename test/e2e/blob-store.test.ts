// The S3 adapter against LocalStack's S3, held to the same BlobStore contract as the folder store, on the data
// bucket the template deploys (versioned, encrypted, with its lifecycle rules and notifications).
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { s3Client } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import type { EnvironmentResources } from '#shared/operator/environment';
import { blobStoreContract } from '../helpers/blob-store-contract.ts';
import { deployTestEnvironment, destroyTestEnvironment } from './support/environment.ts';
import { localstack } from './support/localstack.ts';

let resources: EnvironmentResources;
let store: S3BlobStore;

beforeAll(async () => {
  resources = await deployTestEnvironment('blob');
  store = new S3BlobStore(s3Client(localstack()), resources.bucket);
});
afterAll(() => destroyTestEnvironment(resources));

blobStoreContract('S3 on LocalStack', async () => ({
  store,
  prefix: `runs/${randomBytes(4).toString('hex')}/`,
}));
