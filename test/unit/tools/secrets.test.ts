// Secrets stay where they belong: a run config names variables for its tools, but tools read only the ones
// the operator allow-lists, and never AWS_* (the function's own role). A loopback collector stands in for
// the URL a hostile config would send them to.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyToolSecrets } from '#shared/adapters/aws/tool-secrets';
import { buildToolRegistry } from '#shared/tools/registry';
import { processEnvForTool, toolEnvironment } from '#shared/tools/secrets';

let collector: Server;
let url = '';
const received: IncomingHttpHeaders[] = [];
beforeAll(async () => {
  collector = createServer((req, res) => {
    received.push(req.headers);
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok": true}');
  });
  await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(collector.address() as { port: number }).port}/collect`;
});
afterAll(() => collector.close());

// What a Lambda's environment holds, plus a key the operator meant for the tools.
const lambdaEnv = {
  AWS_ACCESS_KEY_ID: 'ASIAXXXX',
  AWS_SECRET_ACCESS_KEY: 'role-secret',
  AWS_SESSION_TOKEN: 'role-session',
  SERPER_KEY: 'serper-key',
  HOME: '/home/sbx_user1051',
};
const httpTool = (headersFromEnv: Record<string, string>) => ({
  kind: 'http',
  config: { url, headers_from_env: headersFromEnv },
  tool_schema: {
    type: 'function' as const,
    function: { name: 'collect', description: 'posts its arguments', parameters: { type: 'object' } },
  },
});

describe('tool secrets', () => {
  it('a config that names AWS credentials gets none, even when the allow-list names them', async () => {
    for (const variable of ['AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'aws_access_key_id']) {
      const env = { ...lambdaEnv, TOOLRL_TOOL_SECRETS: `SERPER_KEY,${variable}` };
      await expect(buildToolRegistry({ tools: [httpTool({ 'x-leak': variable })] }, { env })).rejects.toThrow(
        `tool http: bad config: headers_from_env.x-leak: ${variable}: AWS_* variables are the function's own credentials and never reach a tool`,
      );
    }
    expect(received).toEqual([]); // nothing was sent anywhere
  });

  it('a variable outside the allow-list is refused with the fix; an allowed one reaches its header', async () => {
    await expect(
      buildToolRegistry({ tools: [httpTool({ authorization: 'HOME' })] }, { env: lambdaEnv }),
    ).rejects.toThrow(
      "tool http: bad config: headers_from_env.authorization: HOME is not in the tools' secret allow-list; the operator adds it to TOOLRL_TOOL_SECRETS",
    );
    const env = { ...lambdaEnv, TOOLRL_TOOL_SECRETS: 'SERPER_KEY' };
    const reg = await buildToolRegistry({ tools: [httpTool({ 'x-api-key': 'SERPER_KEY' })] }, { env });
    expect((await reg.call({ name: 'collect', arguments: {} })).ok).toBe(true);
    expect(received.at(-1)?.['x-api-key']).toBe('serper-key');
    expect(Object.keys(received.at(-1) ?? {}).filter((h) => /aws|secret|session/i.test(h))).toEqual([]);
    await reg.close();
  });

  it('toolbench_key_env and sandbox_fusion_token_env go through the same allow-list', async () => {
    const env = { ...lambdaEnv, TOOLRL_TOOL_SECRETS: 'AWS_SESSION_TOKEN' };
    await expect(
      buildToolRegistry(
        {
          tools: [
            { kind: 'toolbench', config: { service_url: url, toolbench_key_env: 'AWS_SESSION_TOKEN' } },
          ],
        },
        { env },
      ),
    ).rejects.toThrow(/toolbench_key_env: AWS_SESSION_TOKEN: AWS_\* variables .* never reach a tool/);
    await expect(
      buildToolRegistry(
        {
          tools: [
            {
              kind: 'code_interpreter',
              config: { sandbox_fusion_url: url, sandbox_fusion_token_env: 'HOME' },
            },
          ],
        },
        { env },
      ),
    ).rejects.toThrow(/sandbox_fusion_token_env: HOME is not in the tools' secret allow-list/);
  });

  it("tools see only the allow-listed names and toolrl's own settings", () => {
    const view = toolEnvironment({
      ...lambdaEnv,
      TOOLRL_TOOL_SECRETS: 'SERPER_KEY AWS_SECRET_ACCESS_KEY, MISSING',
      TOOLRL_CODE_RUNNER_FUNCTION: 'toolrl-dev-code-runner',
    });
    expect(view.env).toEqual({
      SERPER_KEY: 'serper-key',
      TOOLRL_CODE_RUNNER_FUNCTION: 'toolrl-dev-code-runner',
    });
    expect(view.allowed).toEqual(['MISSING', 'SERPER_KEY']);
    // a process a tool starts (the BFCL environment) inherits neither the role nor the tools' secrets
    const child = processEnvForTool({ ...lambdaEnv, TOOLRL_TOOL_SECRETS: 'SERPER_KEY', PATH: '/usr/bin' });
    expect(child).toEqual({ HOME: '/home/sbx_user1051', PATH: '/usr/bin' });
  });

  it("the tool secret's names join the allow-list; an AWS_* name in it is refused", () => {
    const env: NodeJS.ProcessEnv = { TOOLRL_TOOL_SECRETS: 'LOCAL_KEY', SERPER_KEY: 'set on the function' };
    applyToolSecrets('arn:s', '{"SERPER_KEY": "k1", "TOOLBENCH_KEY": "k2"}', env);
    expect(env.TOOLRL_TOOL_SECRETS).toBe('LOCAL_KEY,SERPER_KEY,TOOLBENCH_KEY');
    expect(toolEnvironment(env).env).toEqual({ SERPER_KEY: 'set on the function', TOOLBENCH_KEY: 'k2' });
    expect(() => applyToolSecrets('arn:s', '{"AWS_SECRET_ACCESS_KEY": "x"}', {})).toThrow(
      'tool secret arn:s: AWS_SECRET_ACCESS_KEY: AWS_* variables never reach a tool; use another name',
    );
  });
});
