// The tools' API keys on AWS: the tool-call function reads one Secrets Manager secret at cold start (a JSON
// object of variable name -> key) into its own environment, where a tool configured with `api_key_env` /
// `toolbench_key_env` finds it. The code sandbox never sees it (it runs with an empty environment).
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/**
 * Sets each `NAME: key` of the secret's JSON object in `env` unless `env` already has NAME (a value set on
 * the function wins). Returns the names set. Throws naming the secret when it is not a JSON object of strings.
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
    if (env[name] === undefined) {
      env[name] = value;
      set.push(name);
    }
  }
  return set;
}

/** Reads the secret named by `secretId` (when given) into `env`; the placeholder of a fresh deploy is `{}`. */
export async function loadToolSecrets(
  secretId: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  client: Pick<SecretsManagerClient, 'send'> = new SecretsManagerClient({}),
): Promise<string[]> {
  if (!secretId) return [];
  const out = await client.send(new GetSecretValueCommand({ SecretId: secretId }));
  if (out.SecretString === undefined) throw new Error(`tool secret ${secretId}: has no string value`);
  return applyToolSecrets(secretId, out.SecretString, env);
}
