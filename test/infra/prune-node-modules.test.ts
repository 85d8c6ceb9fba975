// The image step that keeps only onnxruntime-node's Linux binary for the image's architecture.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';

const SCRIPT = join(REPO_ROOT, 'infra/docker/prune-node-modules.mjs');
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A node_modules with onnxruntime-node's published layout (bin/napi-v6/<platform>/<arch>/) and CDK packages. */
function fakeNodeModules(platforms: Record<string, string[]>): string {
  const root = mkdtempSync(join(tmpdir(), 'toolrl-prune-'));
  dirs.push(root);
  for (const [platform, archs] of Object.entries(platforms))
    for (const arch of archs) {
      const dir = join(root, 'onnxruntime-node/bin/napi-v6', platform, arch);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'onnxruntime_binding.node'), 'binary');
    }
  for (const pkg of ['aws-cdk-lib', 'constructs', 'zod']) {
    mkdirSync(join(root, pkg), { recursive: true });
    writeFileSync(join(root, pkg, 'package.json'), '{}');
  }
  return root;
}

const binding = (root: string, platform: string, arch: string) =>
  existsSync(join(root, 'onnxruntime-node/bin/napi-v6', platform, arch, 'onnxruntime_binding.node'));

describe('prune-node-modules', () => {
  it('keeps linux/x64 only, and drops the CDK packages but not runtime ones', () => {
    // GIVEN the five builds onnxruntime-node 1.30 ships
    const root = fakeNodeModules({ darwin: ['arm64'], linux: ['x64', 'arm64'], win32: ['x64', 'arm64'] });
    // WHEN pruned for an x64 image
    execFileSync(process.execPath, [SCRIPT, root, '--arch', 'x64']);
    // THEN only the linux/x64 binding is left
    expect(binding(root, 'linux', 'x64')).toBe(true);
    for (const [p, a] of [
      ['linux', 'arm64'],
      ['darwin', 'arm64'],
      ['win32', 'x64'],
      ['win32', 'arm64'],
    ] as const)
      expect(binding(root, p, a)).toBe(false);
    expect(existsSync(join(root, 'onnxruntime-node/bin/napi-v6/darwin'))).toBe(false);
    expect(existsSync(join(root, 'aws-cdk-lib'))).toBe(false);
    expect(existsSync(join(root, 'constructs'))).toBe(false);
    expect(existsSync(join(root, 'zod'))).toBe(true);
  });

  it('fails, naming what is missing, when the architecture the image needs has no binding', () => {
    const root = fakeNodeModules({ darwin: ['arm64'], linux: ['arm64'] });
    const r = spawnSync(process.execPath, [SCRIPT, root, '--arch', 'x64'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/no onnxruntime-node binding for linux\/x64/);
  });

  it('refuses bad arguments with a usage line (exit 2)', () => {
    const r = spawnSync(process.execPath, [SCRIPT, '/nonexistent', '--arch', 'sparc'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/usage: prune-node-modules\.mjs NODE_MODULES --arch x64\|arm64/);
  });
});
