// `toolrl sandbox serve`: the built-in sandbox behind SandboxFusion's `/run_code` API. As SandboxFusion does, a
// request sets its own `run_timeout` (default 10 s) and `memory_limit_MB` (absent or <= 0: no limit of its own);
// unlike SandboxFusion, both are clamped to the maxima the operator gave the sandbox (its `limits`), so that a
// client cannot hold a slot or the machine's memory without bound.
import { availableParallelism } from 'node:os';
import { Semaphore } from '../limits.ts';
import { HttpError, type RunningServer, type ServeOptions, serveJson } from '../serve.ts';
import type { SandboxLimits } from './limits.ts';
import {
  type RunCodeRequest,
  RunCodeRequestSchema,
  type RunCodeResponse,
  toRunCodeResponse,
} from './run-code-api.ts';
import type { PythonSandbox } from './sandbox.ts';

const PYTHON_LANGUAGES = new Set(['python', 'python3']);

/** SandboxFusion's `run_timeout` when a request gives none (its RunCodeRequest default), seconds. */
export const SANDBOX_FUSION_DEFAULT_RUN_TIMEOUT_S = 10;

/**
 * The limits one request runs under: what it asked for, up to the sandbox's own limits (the server's maxima).
 * Without a memory limit of its own (SandboxFusion's -1: unlimited) a run gets the maximum.
 */
export function requestLimits(
  req: Pick<RunCodeRequest, 'run_timeout' | 'memory_limit_MB'>,
  max: Pick<SandboxLimits, 'wallS' | 'memoryMb'>,
): { wallS: number; memoryMb: number } {
  const memory = req.memory_limit_MB;
  return {
    wallS: Math.min(req.run_timeout ?? SANDBOX_FUSION_DEFAULT_RUN_TIMEOUT_S, max.wallS),
    memoryMb: memory !== undefined && memory > 0 ? Math.min(memory, max.memoryMb) : max.memoryMb,
  };
}

export function serveSandbox(
  sandbox: PythonSandbox,
  opts: ServeOptions & { concurrency?: number } = {},
): Promise<RunningServer> {
  const slots = new Semaphore(opts.concurrency ?? availableParallelism());
  // It runs code: a page must not be able to POST to it as text/plain (a CORS "simple" request, unannounced).
  return serveJson(
    {
      '/run_code': async (body): Promise<RunCodeResponse> => {
        const r = RunCodeRequestSchema.safeParse(body);
        if (!r.success)
          throw new HttpError(422, {
            detail: r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
          });
        const req = r.data;
        if (!PYTHON_LANGUAGES.has(req.language))
          return {
            status: 'SandboxError',
            message: `language ${req.language} is not supported by the built-in sandbox (python only)`,
            files: {},
          };
        const files = Object.fromEntries(
          Object.entries(req.files).filter((e): e is [string, string] => e[1] !== null),
        );
        try {
          const outcome = await slots.run(() =>
            sandbox.run({
              code: req.code,
              stdin: req.stdin ?? undefined,
              files,
              fetchFiles: req.fetch_files,
              ...requestLimits(req, sandbox.limits),
            }),
          );
          return toRunCodeResponse(outcome);
        } catch (err) {
          return { status: 'SandboxError', message: (err as Error).message, files: {} };
        }
      },
    },
    { requireJson: true, ...opts },
  );
}
