// The run's tokenizer, for counting tool-output tokens (`max_tool_response_length` is in tokens where a tokenizer
// is at hand): the tokenizer files of policy v0 (the learner never changes the tokenizer, and v0 is published
// before any rollout). Used in place from a local folder store; from a remote one only the tokenizer files are
// copied to the scratch folder, never the ONNX weights.
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BlobStore } from '#shared/ports/blob-store';
import { loadTokenCounter, type TokenCounter } from '#shared/tools/token-counter';
import { keys } from '#shared/topology';

/** What shared/policy's ChatTokenizer.load reads; the template file is optional (tokenizer_config may hold it). */
const REQUIRED = ['tokenizer.json', 'tokenizer_config.json'] as const;
const OPTIONAL = ['chat_template.jinja'] as const;

/** The folder with the run's tokenizer files, or null while the run has no policy v0. */
export async function runTokenizerDir(
  blobs: BlobStore,
  runId: string,
  scratchDir: string,
): Promise<string | null> {
  const prefix = keys.policyVersion(runId, 0);
  const local = blobs.localPath?.(prefix);
  if (local !== undefined) return existsSync(join(local, REQUIRED[0])) ? local : null;
  const dir = join(scratchDir, runId, 'tokenizer');
  const done = join(dir, '.complete');
  if (existsSync(done)) return dir;
  const files = new Map<string, Uint8Array>();
  for (const name of [...REQUIRED, ...OPTIONAL]) {
    const data = await blobs.get(`${prefix}${name}`);
    if (data) files.set(name, data);
  }
  if (!files.has(REQUIRED[0])) return null;
  for (const name of REQUIRED)
    if (!files.has(name)) throw new Error(`policy ${prefix} has tokenizer.json but no ${name}`);
  await mkdir(dir, { recursive: true });
  // Each file lands whole (write then rename): concurrent loaders in one container may race here.
  for (const [name, data] of files) {
    const part = join(dir, `${name}.${process.pid}.part`);
    await writeFile(part, data);
    await rename(part, join(dir, name));
  }
  await writeFile(done, '');
  return dir;
}

/**
 * Counts tokens as the policy's tokenizer splits text (no special tokens added), or undefined while the run has
 * no policy (the bench harness, unit tests): then lengths stay in characters.
 */
export async function runTokenCounter(
  blobs: BlobStore,
  runId: string,
  scratchDir: string,
): Promise<TokenCounter | undefined> {
  const dir = await runTokenizerDir(blobs, runId, scratchDir);
  if (dir === null) return undefined;
  return loadTokenCounter(dir);
}
