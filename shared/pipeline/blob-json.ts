// Reading and writing JSON objects in the blob store through their zod schemas.
import type { ZodType } from 'zod';
import { z } from 'zod';
import type { BlobStore, ConditionalPut } from '#shared/ports/blob-store';

export class CorruptObjectError extends Error {
  override name = 'CorruptObjectError';
}

/** The parsed object and its etag, or undefined when the key does not exist. */
export async function readJson<T>(
  blobs: BlobStore,
  key: string,
  schema: ZodType<T>,
): Promise<{ value: T; etag: string } | undefined> {
  const r = await blobs.read(key);
  if (!r) return undefined;
  return { value: parseObject(key, r.body, schema), etag: r.etag };
}

/** The parsed object, or undefined when the key does not exist (no etag: for objects never updated in place). */
export async function getJson<T>(blobs: BlobStore, key: string, schema: ZodType<T>): Promise<T | undefined> {
  const data = await blobs.get(key);
  if (!data) return undefined;
  return parseObject(key, data, schema);
}

function parseObject<T>(key: string, data: Uint8Array, schema: ZodType<T>): T {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(data).toString('utf8'));
  } catch (err) {
    throw new CorruptObjectError(`${key} is not JSON: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new CorruptObjectError(`${key}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

export const toJson = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

export function putJson(blobs: BlobStore, key: string, value: unknown): Promise<{ etag: string }> {
  return blobs.put(key, toJson(value), { contentType: 'application/json' });
}

export function putJsonIfAbsent(blobs: BlobStore, key: string, value: unknown): Promise<ConditionalPut> {
  return blobs.putIfAbsent(key, toJson(value), { contentType: 'application/json' });
}

/**
 * Read-modify-write under compare-and-swap: `update` maps the current value (undefined when absent) to the new
 * one, or to undefined to leave it. Retries on a lost race; returns the value stored when it returned.
 */
export async function updateJson<T>(
  blobs: BlobStore,
  key: string,
  schema: ZodType<T>,
  update: (current: T | undefined) => T | undefined,
  attempts = 20,
): Promise<T | undefined> {
  for (let i = 0; i < attempts; i++) {
    const current = await readJson(blobs, key, schema);
    const next = update(current?.value);
    if (next === undefined) return current?.value;
    const put = current
      ? await blobs.putIfMatch(key, toJson(next), current.etag, { contentType: 'application/json' })
      : await putJsonIfAbsent(blobs, key, next);
    if (put.written) return next;
    await new Promise((r) => setTimeout(r, Math.min(200, 5 * 2 ** i) * Math.random()));
  }
  throw new Error(`${key}: gave up after ${attempts} conflicting updates`);
}
