// Lambda entry of the code runner: runs one code_interpreter program in the built-in sandbox and answers
// SandboxFusion's `/run_code` response, which the tool-call stage turns into the tool result (see
// shared/tools/code/lambda-runner.ts). Its own execution environment and a role that may only write its logs make
// what the program can read here (this process's environment through /proc, the runner's /tmp) worth nothing.
import type { Context } from 'aws-lambda';
import { z } from 'zod';
import { CodeRunnerRequestSchema } from '#shared/tools/code/lambda-runner';
import { DEFAULT_SANDBOX_LIMITS } from '#shared/tools/code/limits';
import { type RunCodeResponse, toRunCodeResponse } from '#shared/tools/code/run-code-api';
import { PythonSandbox } from '#shared/tools/code/sandbox';

/** Time kept back from the function's timeout to stop the program, clean up and answer. */
const REPORT_MARGIN_MS = 5_000;

export async function handler(
  event: unknown,
  context?: Pick<Context, 'getRemainingTimeInMillis'>,
): Promise<RunCodeResponse> {
  const parsed = CodeRunnerRequestSchema.safeParse(event);
  if (!parsed.success)
    return {
      status: 'SandboxError',
      message: `bad code-runner request: ${z.prettifyError(parsed.error)}`,
      files: {},
    };
  const { code, stdin, limits } = parsed.data;
  const leftS = context ? (context.getRemainingTimeInMillis() - REPORT_MARGIN_MS) / 1000 : Infinity;
  const wallS = Math.max(1, Math.min(limits.wallS ?? DEFAULT_SANDBOX_LIMITS.wallS, leftS));
  // Plain processes: Lambda has no namespaces (no bubblewrap) and no root (no throwaway uid). One program per
  // invocation, so the sandbox's per-uid process limit counts only this runner and its program.
  const sandbox = new PythonSandbox({ isolation: 'process', limits: { ...limits, wallS } });
  try {
    return toRunCodeResponse(await sandbox.run({ code, stdin }));
  } catch (err) {
    return { status: 'SandboxError', message: (err as Error).message, files: {} };
  } finally {
    await sandbox.close();
  }
}
