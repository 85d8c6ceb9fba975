// The tools' API keys on AWS: the tool-call function reads one Secrets Manager secret at cold start (a JSON
// object of variable name -> key) into its own environment, where a tool configured with `headers_from_env` /
// `toolbench_key_env` finds it (its names join the tools' allow-list, shared/tools/secrets.ts). The code sandbox
// never sees it (it runs with an empty environment).
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { allowedToolSecrets, isNeverReadable, TOOL_SECRETS_VAR } from '#shared/tools/secrets';
import { httpHandlerOptions } from './clients.ts';

/**
 * Sets each `NAME: key` of the secret's JSON object in `env` unless `env` already has NAME (a value set on
 * the function wins), and adds every NAME to the tools' allow-list (TOOLRL_TOOL_SECRETS): the secret is there
 * for the tools. Returns the names set. Throws naming the secret when it is not a JSON object of strings, or
 * when it names an `AWS_*` variable (the function's own credentials, which no tool may read).
 */
export function applyToolSecrets(secretId: string, secretString: string, env: NodeJS.ProcessEnv): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(secretString);
  } catch {
    throw new Error(`tool secret ${secretId}: not JSON (expected {"VARIABLE_NAME": "key", ...})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error(`tool secret ${secretId}: expected a JSON object {"VARIABLE_NAME": "key", ...}`);
  const set: string[] = [];
  for (const [name, value] of Object.entries(parsed)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name))
      throw new Error(`tool secret ${secretId}: ${JSON.stringify(name)} is not an environment variable name`);
    if (typeof value !== 'string')
      throw new Error(`tool secret ${secretId}: the value of ${name} is not a string`);
    if (isNeverReadable(name))
      throw new Error(
        `tool secret ${secretId}: ${name}: AWS_* variables never reach a tool; use another name`,
      );
    if (env[name] === undefined) {
      env[name] = value;
      set.push(name);
    }
  }
  const allowed = new Set([...allowedToolSecrets(env), ...Object.keys(parsed)]);
  if (allowed.size > 0) env[TOOL_SECRETS_VAR] = [...allowed].sort().join(',');
  return set;
}

/** Reads the secret named by `secretId` (when given) into `env`; the placeholder of a fresh deploy is `{}`. */
export async function loadToolSecrets(
  secretId: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  client: Pick<SecretsManagerClient, 'send'> = new SecretsManagerClient(httpHandlerOptions()),
): Promise<string[]> {
  if (!secretId) return [];
  const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
  if (out.SecretString === undefined) throw new Error(`tool secret ${secretId}: has no string value`);
  return applyToolSecrets(secretId, out.SecretString, env);
}
