// Container images are built from the repository root (they need package.json, shared/ and functions/),
// so their asset context is an allow-list: synth stages only these paths into cdk.out, never node_modules,
// virtual environments or run outputs, and the Docker build happens later, at deploy.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IgnoreMode } from 'aws-cdk-lib';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface ImageContextOptions {
  /** Dockerfile path relative to the repository root. */
  readonly file: string;
  /** Paths (relative to the root) the build needs; everything else is left out of the context. */
  readonly include: readonly string[];
}

export function imageAssetOptions(opts: ImageContextOptions) {
  return {
    file: opts.file,
    ignoreMode: IgnoreMode.DOCKER,
    exclude: ['*', ...opts.include.map((p) => `!${p}`), '**/node_modules', '**/.venv', '**/__pycache__'],
    // Built where `cdk deploy` runs; the functions and the learner run on x86_64.
    platform: Platform.LINUX_AMD64,
  };
}
