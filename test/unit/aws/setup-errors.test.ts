// Without a region or credentials, `toolrl submit|status` and the LocalStack worker say what to set (exit 2),
// instead of the SDK's stack trace; the worker's bad flags get its usage, and --help prints it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { awsSetupError } from '#shared/aws/environment';
import { REPO_ROOT } from '../../../infra/lib/docker-context.ts';
import { writeRun } from '../../e2e/support/run-fixture.ts';

const home = mkdtempSync(join(tmpdir(), 'toolrl-no-aws-'));
/** A shell with no AWS configuration at all: no variables, no ~/.aws, no instance metadata to ask. */
const bareEnv = (extra: Record<string, string> = {}) => ({
  PATH: process.env.PATH ?? '',
  HOME: home,
  AWS_CONFIG_FILE: join(home, 'none'),
  AWS_SHARED_CREDENTIALS_FILE: join(home, 'none'),
  AWS_EC2_METADATA_DISABLED: 'true',
  ...extra,
});
const run = (args: string[], env: Record<string, string>) => {
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};
const toolrl = (args: string[], env: Record<string, string>) =>
  run([join(REPO_ROOT, 'bin/toolrl.mjs'), ...args], env);
const worker = (args: string[], env: Record<string, string> = bareEnv()) =>
  run(['--import', 'tsx', join(REPO_ROOT, 'shared/aws/local-worker.ts'), ...args], env);
/** A line of a JavaScript stack trace. */
const STACK = /^\s+at /m;

describe('AWS setup errors', () => {
  it('maps the SDK missing-region and credential errors to what to set, and leaves others alone', () => {
    expect(awsSetupError(new Error('Region is missing'))?.message).toMatch(/^no AWS region: set AWS_REGION/);
    const noCreds = Object.assign(new Error('Could not load credentials from any providers'), {
      name: 'CredentialsProviderError',
    });
    expect(awsSetupError(noCreds)?.message).toMatch(
      /^no AWS credentials \(Could not load credentials.*aws sso login/,
    );
    const expired = Object.assign(new Error('The security token included in the request is expired'), {
      name: 'ExpiredToken',
    });
    expect(awsSetupError(expired)?.message).toMatch(/^AWS rejected the credentials \(ExpiredToken: /);
    expect(awsSetupError(new Error('socket hang up'))).toBeUndefined();
    expect(awsSetupError('Region is missing')).toBeUndefined();
  });

  it('`toolrl status` with no region says to set AWS_REGION, without a stack, and exits 2', () => {
    const r = toolrl(['status', 'r-1', '--env', 'dev'], bareEnv());
    expect(r.stderr).toMatch(/^toolrl: no AWS region: set AWS_REGION/m);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.code).toBe(2);
  });

  it('`toolrl submit` with a region but no credentials says how to sign in, without a stack, and exits 2', async () => {
    const files = await writeRun(mkdtempSync(join(tmpdir(), 'toolrl-submit-')), { prompts: 2 });
    const r = toolrl(
      ['submit', '--env', 'dev', '--config', files.configPath, '--dataset', files.datasetPath],
      bareEnv({ AWS_REGION: 'us-east-1' }),
    );
    expect(r.stderr).toMatch(/^toolrl: no AWS credentials .*AWS_PROFILE/m);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.code).toBe(2);
  });

  it('local-worker --help prints its usage and exits 0', () => {
    const r = worker(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^usage: node --import tsx shared\/aws\/local-worker.ts --env NAME/);
    expect(r.stdout).toMatch(/--learner-arg=ARG/);
  });

  it('local-worker names a bad flag or a missing --env or endpoint with its usage line, exit 2, no stack', () => {
    for (const [args, env, message] of [
      [['--bogus'], bareEnv(), "Unknown option '--bogus'"],
      [[], bareEnv(), '--env NAME is required'],
      [['--env', 'dev'], bareEnv(), 'the local worker runs against LocalStack: set AWS_ENDPOINT_URL'],
    ] as const) {
      const r = worker([...args], env);
      expect(r.stderr, args.join(' ')).toContain(`local-worker: ${message}`);
      expect(r.stderr).toMatch(/^usage: node --import tsx shared\/aws\/local-worker.ts/m);
      expect(r.stderr).not.toMatch(STACK);
      expect(r.code).toBe(2);
    }
  });

  it('local-worker with an endpoint but no region says to set AWS_REGION, exit 2, no stack', () => {
    const r = worker(['--env', 'dev'], bareEnv({ AWS_ENDPOINT_URL: 'http://127.0.0.1:9' }));
    expect(r.stderr).toMatch(/^local-worker: no AWS region: set AWS_REGION/m);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.code).toBe(2);
  });
});
