// The S3 adapter against LocalStack's S3, held to the same BlobStore contract as the folder store.
import { randomBytes } from 'node:crypto';
import { CreateBucketCommand } from '@aws-sdk/client-s3';
import { beforeAll } from 'vitest';
import { s3Client } from '#shared/adapters/aws/clients';
import { S3BlobStore } from '#shared/adapters/aws/s3-blob-store';
import { blobStoreContract } from '../helpers/blob-store-contract.ts';
import { assertLocalStackUp, localstack } from './support/localstack.ts';

const bucket = `toolrl-contract-${randomBytes(4).toString('hex')}`;
let store: S3BlobStore;

beforeAll(async () => {
  await assertLocalStackUp();
  const client = s3Client(localstack());
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  store = new S3BlobStore(client, bucket);
});

blobStoreContract('S3 on LocalStack', async () => ({
  store,
  prefix: `runs/${randomBytes(4).toString('hex')}/`,
}));
