// The blob-store port: the only way product code touches S3 or the embedded folder.
// Conditional writes (put-if-absent, put-if-match) are what make group emission exactly-once.
import type { Readable } from 'node:stream';

/** What a listing or a head returns about one object. `etag` is opaque: compare it, never parse it. */
export interface BlobInfo {
  readonly key: string;
  readonly etag: string;
  readonly size: number;
  readonly lastModified: Date;
}

export type Body = Uint8Array | string;

/** The result of a conditional write: `written: false` means the condition did not hold and nothing changed. */
export type ConditionalPut = { readonly written: true; readonly etag: string } | { readonly written: false };

export interface PutOptions {
  readonly contentType?: string;
}

export interface BlobStore {
  /** A short description for logs (`file:///tmp/w`, `s3://bucket`). */
  readonly describe: string;
  /** The object's bytes, or undefined when it does not exist. */
  get(key: string): Promise<Uint8Array | undefined>;
  /**
   * The object's bytes with the etag of exactly those bytes, in one request (S3 GetObject answers the ETag), or
   * undefined when it does not exist. What read-modify-write needs before a putIfMatch.
   */
  read(key: string): Promise<{ body: Uint8Array; etag: string } | undefined>;
  /** The object as a stream (large policy weights), or undefined when it does not exist. */
  getStream(key: string): Promise<Readable | undefined>;
  head(key: string): Promise<BlobInfo | undefined>;
  put(key: string, body: Body, opts?: PutOptions): Promise<{ etag: string }>;
  /** Writes only if no object has the key (S3 `If-None-Match: *`). Atomic: of racing writers exactly one wins. */
  putIfAbsent(key: string, body: Body, opts?: PutOptions): Promise<ConditionalPut>;
  /** Writes only if the current object's etag is `etag` (S3 `If-Match`): optimistic concurrency. */
  putIfMatch(key: string, body: Body, etag: string, opts?: PutOptions): Promise<ConditionalPut>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<BlobInfo[]>;
  /** The keys only (cheaper where the store must look up sizes and etags one by one). */
  listKeys(prefix: string): Promise<string[]>;
  delete(key: string): Promise<void>;
  /**
   * A local file path of the object when the store is a local folder (lets the rollout stage load a policy
   * bundle in place instead of copying it); undefined for remote stores.
   */
  localPath?(key: string): string;
}

/** A key that is not a clean relative path (`..`, leading `/`, empty segment). */
export class InvalidKeyError extends Error {
  override name = 'InvalidKeyError';
}

/** Rejects keys that could escape a folder root or that S3 would treat differently from a file system. */
export function assertValidKey(key: string): void {
  if (key.length === 0 || key.length > 1024)
    throw new InvalidKeyError(`invalid blob key (length ${key.length})`);
  if (key.startsWith('/')) throw new InvalidKeyError(`blob key must be relative: ${key}`);
  const parts = key.split('/');
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p === '..' || p === '.') throw new InvalidKeyError(`blob key has a '${p}' segment: ${key}`);
    if (p === '' && i !== parts.length - 1)
      throw new InvalidKeyError(`blob key has an empty segment: ${key}`);
  }
}
