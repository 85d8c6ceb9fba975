// The BlobStore on S3 (AWS SDK v3). Put-if-absent and put-if-match are S3's conditional writes
// (If-None-Match: * and If-Match: <etag>): a lost race answers 412 and nothing is written.
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type PutObjectCommandInput,
  type S3Client,
} from '@aws-sdk/client-s3';
import { lifecycleTagging } from '#shared/deployment/lifecycle';
import {
  assertValidKey,
  type BlobInfo,
  type BlobStore,
  type Body,
  type ConditionalPut,
  type PutOptions,
} from '#shared/ports/blob-store';
import { AWS_TIMEOUTS } from './clients.ts';

const status = (err: unknown): number | undefined =>
  (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
const isNotFound = (err: unknown): boolean =>
  status(err) === 404 || ['NoSuchKey', 'NotFound'].includes((err as Error).name);
/** 412: the condition failed; 409: a concurrent conditional write to the same key is in progress (retryable). */
const isConditionFailed = (err: unknown): boolean =>
  status(err) === 412 || (err as Error).name === 'PreconditionFailed';
const isConflict = (err: unknown): boolean =>
  status(err) === 409 || (err as Error).name === 'ConditionalRequestConflict';

export class S3BlobStore implements BlobStore {
  readonly describe: string;

  constructor(
    private readonly client: S3Client,
    readonly bucket: string,
  ) {
    this.describe = `s3://${bucket}`;
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    return (await this.read(key))?.body;
  }

  async read(key: string): Promise<{ body: Uint8Array; etag: string } | undefined> {
    const r = await this.getObject(key);
    if (!r?.Body) return undefined;
    return { body: await r.Body.transformToByteArray(), etag: r.ETag ?? '' };
  }

  async getStream(key: string): Promise<Readable | undefined> {
    const r = await this.getObject(key);
    return r?.Body as unknown as Readable | undefined;
  }

  async head(key: string): Promise<BlobInfo | undefined> {
    assertValidKey(key);
    try {
      const r = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return {
        key,
        etag: r.ETag ?? '',
        size: r.ContentLength ?? 0,
        lastModified: r.LastModified ?? new Date(0),
      };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async put(key: string, body: Body, opts: PutOptions = {}): Promise<{ etag: string }> {
    const r = await this.client.send(new PutObjectCommand(this.input(key, body, opts)), uploadTimeout(body));
    return { etag: r.ETag ?? '' };
  }

  putIfAbsent(key: string, body: Body, opts: PutOptions = {}): Promise<ConditionalPut> {
    return this.conditionalPut({ ...this.input(key, body, opts), IfNoneMatch: '*' });
  }

  putIfMatch(key: string, body: Body, etag: string, opts: PutOptions = {}): Promise<ConditionalPut> {
    return this.conditionalPut({ ...this.input(key, body, opts), IfMatch: etag });
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    const out: BlobInfo[] = [];
    let token: string | undefined;
    do {
      const r = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }),
      );
      for (const o of r.Contents ?? [])
        if (o.Key)
          out.push({
            key: o.Key,
            etag: o.ETag ?? '',
            size: o.Size ?? 0,
            lastModified: o.LastModified ?? new Date(0),
          });
      token = r.IsTruncated ? r.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async listKeys(prefix: string): Promise<string[]> {
    return (await this.list(prefix)).map((i) => i.key);
  }

  async delete(key: string): Promise<void> {
    assertValidKey(key);
    await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
  }

  private async getObject(key: string) {
    assertValidKey(key);
    try {
      return await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /** Every put variant builds its request here, so each carries the key's lifecycle tag (the bucket expires by it). */
  private input(key: string, body: Body, opts: PutOptions): PutObjectCommandInput {
    assertValidKey(key);
    const tagging = lifecycleTagging(key);
    return {
      Bucket: this.bucket,
      Key: key,
      Body: body,
      ...(opts.contentType ? { ContentType: opts.contentType } : {}),
      ...(tagging ? { Tagging: tagging } : {}),
    };
  }

  private async conditionalPut(input: PutObjectCommandInput): Promise<ConditionalPut> {
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await this.client.send(new PutObjectCommand(input), uploadTimeout(input.Body as Body));
        return { written: true, etag: r.ETag ?? '' };
      } catch (err) {
        if (isConditionFailed(err)) return { written: false };
        // S3 answers 409 to a conditional write racing another one on the key; retrying settles it.
        if (isConflict(err) && attempt < 5) {
          await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
          continue;
        }
        throw err;
      }
    }
  }
}

/** An upload's request time includes sending its body: the control-plane timeout plus 1 s per MB sent. */
const uploadTimeout = (body: Body) => ({
  requestTimeout: AWS_TIMEOUTS.requestMs + Math.ceil(Buffer.byteLength(body) / 1000),
});
