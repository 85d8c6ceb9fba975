// `npx cdk synth -c env=prod` as a user runs it: through cdk.json's app command, offline, with no AWS
// credentials or profile, and no Docker engine (image assets are only staged).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../infra/lib/docker-context.ts';
import { HANG_MS } from '../helpers/hang.ts';

const home = mkdtempSync(join(tmpdir(), 'toolrl-nohome-'));
const out = mkdtempSync(join(tmpdir(), 'toolrl-cdk-cli-'));
afterAll(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(out, { recursive: true, force: true });
});

describe('cdk synth (CLI)', () => {
  it('synthesizes prod offline without credentials, with cdk-nag passing and images staged, not built', () => {
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, CDK_DISABLE_VERSION_CHECK: '1' };
    const r = spawnSync(
      'npx',
      ['cdk', 'synth', '-c', 'env=prod', '--quiet', '--output', out, '--no-notices'],
      {
        cwd: REPO_ROOT,
        env,
        encoding: 'utf8',
        timeout: HANG_MS,
      },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/Successfully synthesized/);
    const manifest = JSON.parse(readFileSync(join(out, 'toolrl-prod-pipeline.assets.json'), 'utf8'));
    // Three images (rollout, tool-call, learner) left for `cdk deploy` to build and push.
    expect(Object.keys(manifest.dockerImages)).toHaveLength(3);
    const template = JSON.parse(readFileSync(join(out, 'toolrl-prod-pipeline.template.json'), 'utf8'));
    expect(JSON.stringify(template)).toContain('p4d.24xlarge');
    expect(readdirSync(out)).toContain('toolrl-prod-storage.template.json');
  });
});
