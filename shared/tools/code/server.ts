// `toolrl sandbox serve`: the built-in sandbox behind SandboxFusion's `/run_code` API.
import { availableParallelism } from 'node:os';
import { Semaphore } from '../limits.ts';
import { HttpError, type RunningServer, type ServeOptions, serveJson } from '../serve.ts';
import { RunCodeRequestSchema, type RunCodeResponse, toRunCodeResponse } from './run-code-api.ts';
import type { PythonSandbox } from './sandbox.ts';

const PYTHON_LANGUAGES = new Set(['python', 'python3']);

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
              wallS: req.run_timeout,
              memoryMb: req.memory_limit_MB && req.memory_limit_MB > 0 ? req.memory_limit_MB : undefined,
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
