// `code_interpreter`: runs the model's Python in the built-in sandbox, or in SandboxFusion when
// `sandbox_fusion_url` is set (verl's SandboxFusionTool config keys are accepted, `default_timeout` and
// `memory_limit_mb` as the run's limits), optionally with ReTool's preprocessing (preprocess.ts). On AWS, where the tool-call
// function names a code runner (TOOLRL_CODE_RUNNER_FUNCTION), the built-in sandbox runs there instead of here.
import { z } from 'zod';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { defineToolKind } from '../kind.ts';
import { readToolSecret } from '../secrets.ts';
import { ToolFailure } from '../types.ts';
import { runCodeRemote } from './client.ts';
import { defaultInvoke, runCodeOnLambda } from './lambda-runner.ts';
import { DEFAULT_SANDBOX_LIMITS } from './limits.ts';
import { printLastExpression, stripCodeFence } from './preprocess.ts';
import { LIMIT_MESSAGES, type RunCodeResponse, toRunCodeResponse } from './run-code-api.ts';
import { PythonSandbox } from './sandbox.ts';

const Config = z.object({
  /** SandboxFusion's `/run_code` URL; without it the built-in sandbox runs the code. */
  sandbox_fusion_url: z.url().optional(),
  /** A variable holding the bearer token of a server started with `toolrl sandbox serve --token` (allow-listed:
   * TOOLRL_TOOL_SECRETS, or a key of the tool secret on AWS). */
  sandbox_fusion_token_env: z.string().optional(),
  default_language: z.literal('python').default('python'),
  /**
   * Wall clock per run, seconds: `run_timeout`, else verl's `default_timeout`, which verl hands to the sandbox as
   * the run's limit; 10 s when neither is set. (`timeout`, common to every tool, is the registry's hard limit.)
   */
  run_timeout: z.number().positive().optional(),
  default_timeout: z.number().positive().optional(),
  /** The run's memory (SandboxFusion's memory_limit_MB; the built-in sandbox caps the program with it). */
  memory_limit_mb: z.number().int().positive().default(DEFAULT_SANDBOX_LIMITS.memoryMb),
  /** ReTool's preprocessing (on for its tool classes): run the code inside a ```python fence, not the fence. */
  strip_code_fence: z.boolean().default(false),
  /** ReTool's preprocessing: print the value of a trailing expression, as a notebook cell shows it. */
  print_last_expression: z.boolean().default(false),
  /** Built-in sandbox only: CPU seconds (default: the wall clock limit). */
  cpu_time: z.number().positive().optional(),
  max_processes: z.number().int().positive().default(DEFAULT_SANDBOX_LIMITS.maxProcesses),
  max_output_bytes: z.number().int().positive().default(DEFAULT_SANDBOX_LIMITS.maxOutputBytes),
  max_file_mb: z.number().int().positive().default(DEFAULT_SANDBOX_LIMITS.maxFileMb),
  /** What the program may keep on disk, input files included (its whole work dir and TMPDIR), MiB. */
  max_disk_mb: z.number().int().positive().default(DEFAULT_SANDBOX_LIMITS.maxDiskMb),
  isolation: z.enum(['auto', 'bwrap', 'process']).default('auto'),
  /** Interpreter for the built-in sandbox (e.g. a venv with numpy and sympy). */
  python: z.string().optional(),
});

/** What the model reads: stdout, then stderr; a failure keeps both and names the cause. */
export function interpretRun(res: RunCodeResponse): string {
  const run = res.run_result;
  if (res.status === 'SandboxError' || !run)
    throw new ToolFailure('internal_error', `sandbox error: ${res.message}`);
  const output = [run.stdout ?? '', run.stderr ?? '']
    .filter(Boolean)
    .join(run.stdout?.endsWith('\n') ? '' : '\n');
  const limit = res.limit as keyof typeof LIMIT_MESSAGES | null | undefined;
  if (run.status === 'TimeLimitExceeded' || limit === 'wall_time')
    throw new ToolFailure('timeout', limit ? LIMIT_MESSAGES[limit] : LIMIT_MESSAGES.wall_time, output);
  if (limit) throw new ToolFailure('resource_limit', LIMIT_MESSAGES[limit], output);
  const code = run.return_code;
  if (code !== 0) {
    const how =
      typeof code === 'number' && code < 0 ? `was killed by signal ${-code}` : `exited with status ${code}`;
    throw new ToolFailure('execution_error', `the program ${how}`, output);
  }
  return output === '' ? '(no output; print() the values you want to see)' : output;
}

/** The run's wall clock limit, seconds (see Config.run_timeout). */
const wallSeconds = (o: z.infer<typeof Config>): number =>
  o.run_timeout ?? o.default_timeout ?? DEFAULT_SANDBOX_LIMITS.wallS;

/** The code as the configured preprocessing leaves it (ReTool's: fence stripped, last expression printed). */
function prepareCode(raw: string, o: z.infer<typeof Config>): string {
  const code = o.strip_code_fence ? stripCodeFence(raw) : raw;
  return o.print_last_expression ? printLastExpression(code) : code;
}

export const codeInterpreterKind = defineToolKind({
  kind: 'code_interpreter',
  // The sandbox enforces the run's limit itself; the registry waits a little longer, so that its
  // "time limit exceeded" (with the output so far) is what the model reads.
  defaults: { timeoutS: DEFAULT_SANDBOX_LIMITS.wallS, numWorkers: 4, timeoutGraceS: 10 },
  config: Config,
  ownTimeout: wallSeconds,
  build: (options, { env, limits }) => {
    const wallS = wallSeconds(options);
    const sandboxLimits = {
      wallS,
      cpuS: options.cpu_time ?? wallS,
      memoryMb: options.memory_limit_mb,
      maxProcesses: options.max_processes,
      maxOutputBytes: options.max_output_bytes,
      maxFileMb: options.max_file_mb,
      maxDiskMb: options.max_disk_mb,
    };
    // The runner uses its image's python3 and its own isolation (`python` and `isolation` do not apply there).
    const codeRunner = options.sandbox_fusion_url ? undefined : env.env[FUNCTION_ENV.codeRunnerFunction];
    const fusionToken = options.sandbox_fusion_token_env
      ? readToolSecret(
          env,
          options.sandbox_fusion_token_env,
          'tool code_interpreter: bad config: sandbox_fusion_token_env',
        )
      : undefined;
    const sandbox =
      options.sandbox_fusion_url || codeRunner
        ? null
        : new PythonSandbox({ isolation: options.isolation, python: options.python, limits: sandboxLimits });
    return {
      tools: [
        {
          schema: {
            type: 'function',
            function: {
              name: 'code_interpreter',
              description:
                'Run Python 3 code in a sandbox and return what it prints (stdout and stderr). No network; each call starts fresh.',
              parameters: {
                type: 'object',
                properties: {
                  code: { type: 'string', description: 'Python source to run; print() the results.' },
                },
                required: ['code'],
                additionalProperties: false,
              },
            },
          },
          execute: async (args, ctx) => {
            const code = prepareCode(String(args.code), options);
            if (codeRunner)
              return interpretRun(
                await runCodeOnLambda(
                  await defaultInvoke(),
                  codeRunner,
                  { code, limits: sandboxLimits },
                  ctx.signal,
                ),
              );
            if (!sandbox)
              return interpretRun(
                await runCodeRemote(
                  options.sandbox_fusion_url!,
                  { code, run_timeout: wallS, memory_limit_MB: options.memory_limit_mb },
                  {
                    signal: ctx.signal,
                    maxRetries: limits.maxRetries,
                    retryBaseMs: limits.retryBaseMs,
                    token: fusionToken,
                  },
                ),
              );
            let outcome: Awaited<ReturnType<PythonSandbox['run']>>;
            try {
              outcome = await sandbox.run({ code }, ctx.signal);
            } catch (err) {
              throw new ToolFailure('internal_error', (err as Error).message);
            }
            return interpretRun(toRunCodeResponse(outcome));
          },
          close: async () => sandbox?.close(),
        },
      ],
    };
  },
});
