// The code_interpreter's backend on AWS: the model's program runs in the code-runner Lambda function
// (functions/code-runner), not in the tool-call process. On Lambda the built-in sandbox cannot move a program to
// another uid, so it can read /proc/<pid>/environ of the process that started it, role credentials included; the
// code runner's role grants nothing beyond its own logs. The request carries the tool's limits, the
// answer is SandboxFusion's `/run_code` response (the built-in sandbox's, mapped by toRunCodeResponse).

import { z } from 'zod';
import { httpHandlerOptions } from '#shared/deployment/aws-http';
import { FUNCTIONS } from '#shared/topology';
import { ToolFailure } from '../types.ts';
import { type RunCodeResponse, RunCodeResponseSchema } from './run-code-api.ts';

/** @example {"code": "print(1+1)", "limits": {"wallS": 10, "cpuS": 10, "memoryMb": 1024}} */
export const CodeRunnerRequestSchema = z
  .object({
    code: z.string().max(1024 * 1024),
    stdin: z.string().optional(),
    /** The sandbox's limits (SandboxLimits); the runner's defaults fill the rest. */
    limits: z
      .object({
        wallS: z.number().positive(),
        cpuS: z.number().positive(),
        memoryMb: z.number().int().positive(),
        maxProcesses: z.number().int().positive(),
        maxOutputBytes: z.number().int().positive(),
        maxFileMb: z.number().int().positive(),
        maxDiskMb: z.number().int().positive(),
      })
      .partial()
      .strict()
      .default({}),
  })
  .strict();
export type CodeRunnerRequest = z.input<typeof CodeRunnerRequestSchema>;

/** What Lambda's Invoke answers (the fields read here; LambdaClient's InvokeCommandOutput has them). */
export interface InvokeOutput {
  /** `Unhandled` or `Handled` when the function failed; Payload is then its error object. */
  FunctionError?: string;
  Payload?: Uint8Array;
}

/** Invokes a function synchronously (RequestResponse) with a JSON payload. */
export type Invoke = (functionName: string, payload: string, signal?: AbortSignal) => Promise<InvokeOutput>;

let lambdaInvoke: Promise<Invoke> | undefined;

/**
 * Invoke through one LambdaClient per process, created on first use (embedded and LocalStack runs never load
 * the SDK's Lambda client). Region and credentials come from the environment, as for the other AWS clients; the
 * SDK retries throttling and transient errors itself.
 */
export function defaultInvoke(): Promise<Invoke> {
  lambdaInvoke ??= import('@aws-sdk/client-lambda').then(({ LambdaClient, InvokeCommand }) => {
    // The runner may work for as long as its function timeout (the tool-call stage's); then Lambda answers.
    const client = new LambdaClient(httpHandlerOptions((FUNCTIONS['tool-call'].timeoutSec + 15) * 1000));
    return (functionName, payload, signal) =>
      client.send(
        new InvokeCommand({
          FunctionName: functionName,
          InvocationType: 'RequestResponse',
          Payload: new TextEncoder().encode(payload),
        }),
        { abortSignal: signal },
      );
  });
  return lambdaInvoke;
}

const ErrorPayloadSchema = z.object({
  errorType: z.string().optional(),
  errorMessage: z.string().optional(),
});

/**
 * Runs one program on the code runner. Failures of the invocation itself become tool failures the model reads
 * (`rate_limited` when Lambda throttles, `timeout` when the runner ran past its function timeout,
 * `internal_error` otherwise); an abort (the tool's own timeout) is rethrown for the registry to report.
 */
export async function runCodeOnLambda(
  invoke: Invoke,
  functionName: string,
  req: CodeRunnerRequest,
  signal?: AbortSignal,
): Promise<RunCodeResponse> {
  let out: InvokeOutput;
  try {
    out = await invoke(functionName, JSON.stringify(req), signal);
  } catch (err) {
    if (signal?.aborted) throw signal.reason ?? err;
    const e = err as Error;
    if (e.name === 'TooManyRequestsException')
      throw new ToolFailure('rate_limited', `the code runner is at its concurrency limit: ${e.message}`);
    throw new ToolFailure(
      'internal_error',
      `cannot invoke the code runner ${functionName}: ${e.name}: ${e.message}`,
    );
  }
  const text = out.Payload ? new TextDecoder().decode(out.Payload) : '';
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (out.FunctionError) {
    const e = ErrorPayloadSchema.safeParse(body);
    const type = (e.success && e.data.errorType) || out.FunctionError;
    const message = (e.success && e.data.errorMessage) || text.slice(0, 500);
    if (type === 'Sandbox.Timedout' || /Task timed out/.test(message))
      throw new ToolFailure('timeout', `the code runner ran past its function timeout: ${message}`);
    throw new ToolFailure('internal_error', `the code runner failed (${type}): ${message}`);
  }
  const parsed = RunCodeResponseSchema.safeParse(body);
  if (!parsed.success)
    throw new ToolFailure(
      'internal_error',
      `the code runner answered in an unexpected shape: ${text.slice(0, 200) || '(empty payload)'}`,
    );
  return parsed.data;
}
