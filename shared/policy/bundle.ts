// Reads a rollout bundle folder (model.onnx, model.onnx.data, tokenizer files, manifest.json) and checks it
// against its manifest before anything heavy is loaded, so a truncated upload fails with the file's name.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { type BundleManifest, BundleManifestSchema } from '#shared/schemas/policy';

export class BundleError extends Error {
  override name = 'BundleError';
}

export interface Bundle {
  dir: string;
  manifest: BundleManifest;
  modelPath: string;
}

/** How much of the bundle to check: file sizes (cheap, default) or also sha256 (reads every byte). */
export type BundleCheck = 'size' | 'sha256';

export async function readBundle(dir: string, check: BundleCheck = 'size'): Promise<Bundle> {
  const root = resolve(dir);
  const manifestPath = join(root, 'manifest.json');
  if (!existsSync(manifestPath)) throw new BundleError(`${root} is not a rollout bundle: no manifest.json`);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch (err) {
    throw new BundleError(`${manifestPath} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = BundleManifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
    throw new BundleError(`${manifestPath} does not match the bundle manifest schema: ${issues}`);
  }
  const manifest = parsed.data;
  for (const required of ['model.onnx', 'tokenizer.json', 'tokenizer_config.json']) {
    if (!existsSync(join(root, required))) throw new BundleError(`${root} is missing ${required}`);
  }
  for (const [name, meta] of Object.entries(manifest.files)) {
    const path = join(root, name);
    if (!existsSync(path)) throw new BundleError(`${root} is missing ${name}, listed in manifest.json`);
    const bytes = statSync(path).size;
    if (bytes !== meta.bytes)
      throw new BundleError(
        `${path} has ${bytes} bytes, manifest.json says ${meta.bytes} (truncated or stale copy?)`,
      );
    if (check === 'sha256') {
      const sha = await sha256File(path);
      if (sha !== meta.sha256)
        throw new BundleError(`${path} has sha256 ${sha}, manifest.json says ${meta.sha256}`);
    }
  }
  return { dir: root, manifest, modelPath: join(root, 'model.onnx') };
}

export function sha256File(path: string): Promise<string> {
  return new Promise((ok, fail) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', fail)
      .on('end', () => ok(hash.digest('hex')));
  });
}
