// Without a region or credentials, `toolrl submit|status` and the LocalStack worker say what to set (exit 2),
// instead of the SDK's stack trace; the worker's bad flags get its usage, and --help prints it.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AWS_MAX_SOCKETS, AWS_TIMEOUTS, s3Client, sqsClient } from '#shared/adapters/aws/clients';
import { awsSetupError } from '#shared/operator/environment';
import { REPO_ROOT } from '../../../infra/lib/docker-context.ts';
import { writeRun } from '../../e2e/support/run-fixture.ts';
import { HANG_MS } from '../../helpers/hang.ts';

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
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, env, encoding: 'utf8', timeout: HANG_MS });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};
const toolrl = (args: string[], env: Record<string, string>) =>
  run([join(REPO_ROOT, 'bin/toolrl.mjs'), ...args], env);
const worker = (args: string[], env: Record<string, string> = bareEnv()) =>
  run(['--import', 'tsx', join(REPO_ROOT, 'shared/operator/local-worker.ts'), ...args], env);
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
    expect(r.stdout).toMatch(/^usage: node --import tsx shared\/operator\/local-worker.ts --env NAME/);
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
      expect(r.stderr).toMatch(/^usage: node --import tsx shared\/operator\/local-worker.ts/m);
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

/** A listener that accepts every connection and never answers: a wedged LocalStack. */
async function wedged(): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer((s) => void sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as { port: number }).port, sockets };
}

/** Runs toolrl without blocking the event loop (the wedged listener lives in this process). */
const toolrlAsync = (args: string[], env: Record<string, string>) =>
  new Promise<{ code: number | null; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/toolrl.mjs'), ...args], {
      cwd: REPO_ROOT,
      env,
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });

const localEnv = (port: number) =>
  bareEnv({
    AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    TOOLRL_BUCKET: 'b',
  });

describe('timeouts on every AWS client', () => {
  const servers: Server[] = [];
  afterAll(() => {
    for (const s of servers) s.close();
  });

  it('gives the S3 and SQS clients connection and request timeouts that throw', async () => {
    for (const c of [s3Client({ region: 'eu-west-1' }), sqsClient({ region: 'eu-west-1' })]) {
      const handler = c.config.requestHandler as unknown as {
        configProvider: Promise<Record<string, unknown>>;
      };
      const config = await handler.configProvider;
      expect(config).toMatchObject({
        connectionTimeout: AWS_TIMEOUTS.connectMs,
        requestTimeout: AWS_TIMEOUTS.requestMs,
        throwOnRequestTimeout: true,
      });
      // The connection timeout counts a wait for a free socket: the pools are sized above what a process has in
      // flight (the SDK's default of 50 made the LocalStack worker's sends time out: bench/pipeline/sqs-pool.ts).
      const https = config.httpsAgent as { maxSockets: number };
      const http = (await (config.httpAgentProvider as () => Promise<{ maxSockets: number }>)()).maxSockets;
      expect([https.maxSockets, http]).toEqual([AWS_MAX_SOCKETS, AWS_MAX_SOCKETS]);
    }
  });

  it('`toolrl status` against a LocalStack that accepts connections and never answers fails with a clear error, exit 2', async () => {
    const w = await wedged();
    servers.push(w.server);
    const r = await toolrlAsync(['status', 'r-1', '--env', 'dev'], localEnv(w.port));
    expect(w.sockets.length).toBeGreaterThan(0); // it did connect: the hang was the server's
    expect(r.stderr).toMatch(
      new RegExp(
        `^toolrl: the AWS endpoint http://127.0.0.1:${w.port} did not answer within 5 s: it accepts connections but does not respond; restart it`,
        'm',
      ),
    );
    expect(r.stderr).not.toMatch(STACK);
    expect(r.code).toBe(2);
  });

  it('`toolrl submit` against an endpoint where nothing listens says so, exit 2', async () => {
    const w = await wedged();
    const { port } = w;
    await new Promise((r) => w.server.close(r)); // nothing listens there now
    const files = await writeRun(mkdtempSync(join(tmpdir(), 'toolrl-submit-')), { prompts: 2 });
    const r = await toolrlAsync(
      ['submit', '--env', 'dev', '--config', files.configPath, '--dataset', files.datasetPath],
      localEnv(port),
    );
    expect(r.stderr).toMatch(
      new RegExp(`^toolrl: cannot reach the AWS endpoint http://127.0.0.1:${port}: connection refused`, 'm'),
    );
    expect(r.code).toBe(2);
  });
});
