// SandboxFusion's `/run_code` request and response, and the mapping from a built-in sandbox run to
// that response, so the built-in server and a real SandboxFusion are interchangeable.
import { z } from 'zod';
import type { LimitHit, RunOutcome } from './limits.ts';

/** @example {"code": "print(1+1)", "language": "python", "run_timeout": 10, "memory_limit_MB": 1024} */
export const RunCodeRequestSchema = z.object({
  code: z.string().max(1024 * 1024),
  language: z.string().default('python'),
  compile_timeout: z.number().positive().optional(),
  run_timeout: z.number().positive().optional(),
  memory_limit_MB: z.number().optional(),
  stdin: z.string().nullable().optional(),
  /** Files to place in the work dir: path -> base64 (null entries are ignored). */
  files: z.record(z.string(), z.string().nullable()).default({}),
  fetch_files: z.array(z.string()).default([]),
});
export type RunCodeRequest = z.infer<typeof RunCodeRequestSchema>;

export const RunResultSchema = z.object({
  status: z.enum(['Finished', 'Error', 'TimeLimitExceeded']).or(z.string()),
  execution_time: z.number().nullable().optional(),
  return_code: z.number().nullable().optional(),
  stdout: z.string().nullable().optional(),
  stderr: z.string().nullable().optional(),
});

/** @example {"status": "Success", "message": "", "compile_result": null, "run_result": {"status": "Finished", "execution_time": 0.02, "return_code": 0, "stdout": "2\n", "stderr": ""}, "files": {}} */
export const RunCodeResponseSchema = z.object({
  status: z.enum(['Success', 'Failed', 'SandboxError']).or(z.string()),
  message: z.string().default(''),
  compile_result: RunResultSchema.nullable().optional(),
  run_result: RunResultSchema.nullable().optional(),
  executor_pod_name: z.string().nullable().optional(),
  files: z.record(z.string(), z.string()).default({}),
  /** toolrl's addition: which limit stopped the program (absent from SandboxFusion's answers). */
  limit: z.string().nullable().optional(),
});
export type RunCodeResponse = z.infer<typeof RunCodeResponseSchema>;

export const LIMIT_MESSAGES: Record<LimitHit, string> = {
  wall_time: 'the program ran past its time limit and was stopped',
  cpu_time: 'the program used more CPU time than allowed and was stopped',
  memory: 'the program ran out of memory (memory limit reached)',
  processes: 'the program tried to start more processes than allowed',
  output: 'the program printed more output than allowed and was stopped',
  file_size: 'the program wrote a file larger than allowed',
  disk: 'the program wrote more to disk than allowed (disk limit reached)',
};

export function toRunCodeResponse(o: RunOutcome): RunCodeResponse {
  const timeLimited = o.limit === 'wall_time' || o.limit === 'cpu_time';
  return {
    status: o.exitCode === 0 && !o.limit ? 'Success' : 'Failed',
    message: o.limit ? LIMIT_MESSAGES[o.limit] : '',
    compile_result: null,
    run_result: {
      status: timeLimited ? 'TimeLimitExceeded' : 'Finished',
      execution_time: Math.round(o.wallMs) / 1000,
      return_code: o.exitCode,
      stdout: o.stdout,
      stderr: o.stderr,
    },
    executor_pod_name: null,
    files: o.files,
    limit: o.limit,
  };
}
