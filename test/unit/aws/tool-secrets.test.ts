// The tool-call function's API keys: the secret's JSON object lands in its environment, bad secrets fail loudly.
import type { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import { describe, expect, it } from 'vitest';
import { applyToolSecrets, loadToolSecrets } from '#shared/adapters/aws/tool-secrets';

describe('tool secrets', () => {
  it('sets each key in the environment, keeping values the function already has', () => {
    const env: NodeJS.ProcessEnv = { TOOLBENCH_KEY: 'from-function-config' };
    const set = applyToolSecrets('arn:s', '{"SERPER_KEY": "k1", "TOOLBENCH_KEY": "k2"}', env);
    expect(set).toEqual(['SERPER_KEY']);
    expect(env).toEqual({
      TOOLBENCH_KEY: 'from-function-config',
      SERPER_KEY: 'k1',
      TOOLRL_TOOL_SECRETS: 'SERPER_KEY,TOOLBENCH_KEY', // the tools may read what their secret holds
    });
  });

  it.each([
    ['not json', /arn:s: not JSON/],
    ['["a"]', /arn:s: expected a JSON object/],
    ['{"BAD-NAME": "k"}', /"BAD-NAME" is not an environment variable name/],
    ['{"N": 3}', /the value of N is not a string/],
  ])('refuses %s', (secret, message) => {
    expect(() => applyToolSecrets('arn:s', secret, {})).toThrow(message);
  });

  it('reads the named secret through the client, and nothing when no secret is configured', async () => {
    const asked: unknown[] = [];
    const client = {
      send: async (cmd: GetSecretValueCommand) => {
        asked.push(cmd.input);
        return { SecretString: '{"K": "v"}' };
      },
    } as never;
    const env: NodeJS.ProcessEnv = {};
    expect(await loadToolSecrets('arn:aws:secretsmanager:x', env, client)).toEqual(['K']);
    expect(asked).toEqual([{ SecretId: 'arn:aws:secretsmanager:x' }]);
    expect(env['K']).toBe('v');
    expect(await loadToolSecrets(undefined, env, client)).toEqual([]);
    expect(asked).toHaveLength(1);
  });
});
