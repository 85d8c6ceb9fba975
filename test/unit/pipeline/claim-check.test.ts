// The claim check: large bodies go to the blob store by hash; the reader verifies and names the key on failure.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { decodeMessage, encodeMessage, sha256Hex } from '#shared/pipeline/claim-check';
import { BadMessageError } from '#shared/ports/errors';

const store = () => new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-cc-')));

describe('claim check', () => {
  it('keeps a small payload inline', async () => {
    const s = store();
    const body = await encodeMessage(s, 'r', { a: 1 }, 100);
    expect(body).toBe('{"a":1}');
    expect(await decodeMessage(s, body)).toEqual({ a: 1 });
    expect(await s.list('runs/')).toEqual([]);
  });

  it('stores a payload over the threshold under its sha256 and carries {key, sha256, bytes}', async () => {
    const s = store();
    const payload = { tokens: Array.from({ length: 100 }, (_, i) => i) };
    const json = JSON.stringify(payload);
    const body = await encodeMessage(s, 'r', payload, 100);
    const sha = sha256Hex(json);
    expect(JSON.parse(body)).toEqual({
      schemaVersion: 1,
      claimCheck: { key: `runs/r/messages/${sha}.json`, sha256: sha, bytes: json.length },
    });
    expect(await decodeMessage(s, body)).toEqual(payload);
  });

  it('fails permanently, naming the key, when the object was altered or is gone', async () => {
    const s = store();
    const body = await encodeMessage(s, 'r', { big: 'x'.repeat(500) }, 100);
    const { key } = JSON.parse(body).claimCheck;
    await s.put(key, '{"big": "tampered"}');
    const err = (await decodeMessage(s, body).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(BadMessageError);
    expect(err.message).toMatch(new RegExp(`claim check ${key}: sha256 mismatch`));
    await s.delete(key);
    await expect(decodeMessage(s, body)).rejects.toThrow(`claim check ${key}: object not found`);
  });

  it('rejects a body that is not JSON as a bad message', async () => {
    await expect(decodeMessage(store(), '<xml/>')).rejects.toBeInstanceOf(BadMessageError);
  });
});
