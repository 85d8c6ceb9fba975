// Claim check: a message body over the queue's threshold is stored in the blob store under its sha256 and
// the queue carries {key, sha256}; the reader verifies the hash and fails permanently, naming the key.
import { createHash } from 'node:crypto';
import type { BlobStore } from '#shared/ports/blob-store';
import { BadMessageError } from '#shared/ports/errors';
import { ClaimCheckEnvelopeSchema } from '#shared/schemas/messages/claim-check';
import { CLAIM_CHECK_THRESHOLD_BYTES, keys } from '#shared/topology';

export const sha256Hex = (data: string | Uint8Array): string =>
  createHash('sha256').update(data).digest('hex');

/** The queue body for `payload`: the JSON itself, or a claim-check envelope when it is too large. */
export async function encodeMessage(
  blobs: BlobStore,
  runId: string,
  payload: unknown,
  thresholdBytes = CLAIM_CHECK_THRESHOLD_BYTES,
): Promise<string> {
  const body = JSON.stringify(payload);
  const bytes = Buffer.byteLength(body);
  if (bytes <= thresholdBytes) return body;
  const sha256 = sha256Hex(body);
  const key = keys.claimCheck(runId, sha256);
  // Content-addressed: a resend of the same payload finds the object already there.
  await blobs.putIfAbsent(key, body, { contentType: 'application/json' });
  return JSON.stringify({ schemaVersion: 1, claimCheck: { key, sha256, bytes } });
}

/** The payload of a queue body (following a claim check). Anything malformed is a BadMessageError. */
export async function decodeMessage(blobs: BlobStore, body: string): Promise<unknown> {
  const json = parseJson(body, 'message body');
  const envelope = ClaimCheckEnvelopeSchema.safeParse(json);
  if (!envelope.success) return json;
  const { key, sha256 } = envelope.data.claimCheck;
  const data = await blobs.get(key);
  if (!data) throw new BadMessageError(`claim check ${key}: object not found`);
  const actual = sha256Hex(data);
  if (actual !== sha256)
    throw new BadMessageError(
      `claim check ${key}: sha256 mismatch (message says ${sha256}, object is ${actual})`,
    );
  return parseJson(Buffer.from(data).toString('utf8'), `claim check ${key}`);
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BadMessageError(`${what} is not JSON: ${(err as Error).message}`);
  }
}
