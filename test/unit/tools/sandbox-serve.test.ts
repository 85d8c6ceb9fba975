// `toolrl sandbox serve` runs code for whoever reaches it: a web page's cross-site POST (text/plain, a foreign
// Host after DNS rebinding, an Origin) is refused before any code runs; a token, when given, is required; the
// command warns when it binds beyond loopback. Requests go over raw sockets so Host and Origin are exactly
// what a browser would send.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PythonSandbox } from '#shared/tools/code/sandbox';
import { serveSandbox } from '#shared/tools/code/server';
import type { RunningServer } from '#shared/tools/serve';
import { type CliServer, startCliServer } from './cli-server.ts';

const box = new PythonSandbox({ isolation: 'auto' });
let open: RunningServer;
let guarded: RunningServer;
beforeAll(async () => {
  open = await serveSandbox(box, { concurrency: 1 });
  guarded = await serveSandbox(box, { concurrency: 1, token: 's3cret-token' });
});
afterAll(async () => {
  await open.close();
  await guarded.close();
  await box.close();
});

const CODE = JSON.stringify({ code: 'print(6 * 7)', language: 'python' });

function post(
  server: RunningServer,
  headers: Record<string, string>,
  body = CODE,
): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: server.port, path: '/run_code', method: 'POST', headers, setHost: false },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const local = (port: number) => ({ host: `127.0.0.1:${port}`, 'content-type': 'application/json' });

describe('toolrl sandbox serve refuses what a browser can send', () => {
  it('runs a JSON request addressed to loopback', async () => {
    const r = await post(open, local(open.port));
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'Success', run_result: { stdout: '42\n' } });
  });

  it('refuses a cross-site text/plain POST with a foreign Host and Origin (the audit reproduction)', async () => {
    const r = await post(open, {
      host: 'attacker.example:80',
      origin: 'http://attacker.example',
      'content-type': 'text/plain',
    });
    expect(r.status).toBe(403);
    expect(r.body.detail).toBe('Host "attacker.example:80" is not one this server answers to');
  });

  it('refuses a rebound name, any Origin, and a body that is not application/json', async () => {
    expect((await post(open, { ...local(open.port), host: 'rebind.attacker.example' })).status).toBe(403);
    const withOrigin = await post(open, { ...local(open.port), origin: `http://127.0.0.1:${open.port}` });
    expect(withOrigin).toEqual({
      status: 403,
      body: { detail: 'requests from web pages (with an Origin header) are refused' },
    });
    const plain = await post(open, { ...local(open.port), 'content-type': 'text/plain;charset=UTF-8' });
    expect(plain).toEqual({
      status: 415,
      body: { detail: 'the body must be sent as application/json, not "text/plain"' },
    });
    // localhost and [::1] are loopback names too
    expect((await post(open, { ...local(open.port), host: `localhost:${open.port}` })).status).toBe(200);
    expect((await post(open, { ...local(open.port), host: `[::1]:${open.port}` })).status).toBe(200);
  });

  it('requires the bearer token when one is set', async () => {
    const headers = local(guarded.port);
    expect((await post(guarded, headers)).status).toBe(401);
    expect((await post(guarded, { ...headers, authorization: 'Bearer s3cret-tokeX' })).status).toBe(401);
    const ok = await post(guarded, { ...headers, authorization: 'Bearer s3cret-token' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ run_result: { stdout: '42\n' } });
  });
});

describe('the sandbox serve command', () => {
  let server: CliServer | undefined;
  afterAll(async () => server?.stop());

  it('warns on a non-loopback bind, and the code_interpreter client sends its token', async () => {
    server = await startCliServer(['sandbox', 'serve', '--host', '0.0.0.0', '--token', 'tok-1']);
    // stderr and stdout are separate pipes: the warning, written first, may be read after the URL
    await vi.waitFor(() =>
      expect(server!.stderr()).toMatch(
        /toolrl sandbox: warning: bound to 0\.0\.0\.0, not loopback: anyone who can reach this port runs code here as \S+\n/,
      ),
    );
    const { buildToolRegistry } = await import('#shared/tools/registry');
    const tools = (tokenEnv: string) => ({
      tools: [
        {
          kind: 'code_interpreter',
          config: { sandbox_fusion_url: server!.url, sandbox_fusion_token_env: tokenEnv, max_retries: 0 },
        },
      ],
    });
    const env = { SANDBOX_TOKEN: 'tok-1', WRONG: 'nope', TOOLRL_TOOL_SECRETS: 'SANDBOX_TOKEN,WRONG' };
    const reg = await buildToolRegistry(tools('SANDBOX_TOKEN'), { env });
    expect(await reg.call({ name: 'code_interpreter', arguments: { code: 'print(1 + 1)' } })).toMatchObject({
      ok: true,
      output: '2\n',
    });
    const wrong = await buildToolRegistry(tools('WRONG'), { env });
    const refused = await wrong.call({ name: 'code_interpreter', arguments: { code: 'print(1)' } });
    expect(refused.ok).toBe(false);
    expect(refused.error?.message).toMatch(/HTTP 401: .*bearer token/);
    await reg.close();
    await wrong.close();
  });
});
