// Which environment variables a tool may read. A run config names variables (`headers_from_env`,
// `toolbench_key_env`) and is uploaded by whoever may write the bucket's input prefix, so the names it may use
// are decided by the operator, not by the config: those listed in TOOLRL_TOOL_SECRETS (set where the stage
// runs) and, on AWS, those of the tools' Secrets Manager secret. `AWS_*` never reaches a tool, listed or not:
// it is the function's own role.
import { FUNCTION_ENV } from '#shared/deployment/function-env';

/** Comma- or space-separated variable names tools may read, set by the operator where the tool-call stage runs. */
export const TOOL_SECRETS_VAR = 'TOOLRL_TOOL_SECRETS';

/** The function's own credentials and settings: never readable by a tool, whatever the allow-list says. */
export const isNeverReadable = (name: string): boolean => /^AWS_/i.test(name);

// toolrl's own settings a tool kind needs (not credentials): the code runner function's name on AWS.
const SETTINGS = [FUNCTION_ENV.codeRunnerFunction];

type Env = Readonly<Record<string, string | undefined>>;

/** The names the operator allows, from TOOLRL_TOOL_SECRETS in `source`. */
export function allowedToolSecrets(source: Env): string[] {
  const names = (source[TOOL_SECRETS_VAR] ?? '').split(/[\s,]+/).filter(Boolean);
  return [...new Set(names)].filter((n) => !isNeverReadable(n)).sort();
}

/** What tools are given in place of the process environment: the allowed names (and toolrl's settings) only. */
export function toolEnvironment(source: Env): { env: Env; allowed: readonly string[] } {
  const allowed = allowedToolSecrets(source);
  const env: Record<string, string | undefined> = {};
  for (const name of [...allowed, ...SETTINGS]) if (source[name] !== undefined) env[name] = source[name];
  return { env: Object.freeze(env), allowed: Object.freeze(allowed) };
}

/**
 * The value of a variable a tool config names (`where` says which option, for the message). Throws when the
 * name is one tools may never read or is not in the allow-list; undefined when allowed but not set.
 */
export function readToolSecret(
  tool: { env: Env; allowedSecrets: readonly string[] },
  name: string,
  where: string,
): string | undefined {
  if (isNeverReadable(name))
    throw new Error(
      `${where}: ${name}: AWS_* variables are the function's own credentials and never reach a tool`,
    );
  if (!tool.allowedSecrets.includes(name))
    throw new Error(
      `${where}: ${name} is not in the tools' secret allow-list; the operator adds it to ${TOOL_SECRETS_VAR} where ` +
        'the tool-call stage runs (on AWS: a key of the tool-api-keys secret, infra/DEPLOY.md)',
    );
  return tool.env[name];
}

/** The environment for a process a tool starts: the parent's, without `AWS_*` and the tools' secrets. */
export function processEnvForTool(source: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const secrets = new Set(allowedToolSecrets(source));
  return Object.fromEntries(
    Object.entries(source).filter(([k]) => !isNeverReadable(k) && !secrets.has(k) && k !== TOOL_SECRETS_VAR),
  );
}
