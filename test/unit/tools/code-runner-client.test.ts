// code_interpreter's AWS backend (shared/tools/code/lambda-runner.ts) with Lambda's Invoke injected: a round trip
// through the real code-runner handler, and how each way an invocation fails reaches the model as a tool result.
// The tool picks this backend when the tool-call function names a code runner, and then never runs code itself.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { handler } from '#functions/code-runner/index';
import { FUNCTION_ENV } from '#shared/deployment/function-env';
import { type Invoke, type InvokeOutput, runCodeOnLambda } from '#shared/tools/code/lambda-runner';
import { interpretRun } from '#shared/tools/code/tool';
import { buildToolRegistry } from '#shared/tools/registry';
import { ToolFailure } from '#shared/tools/types';

const encode = (v: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(v));

/** Lambda's answer for a function that threw (what Invoke returns with FunctionError set). */
const failed = (errorType: string, errorMessage: string): InvokeOutput => ({
  FunctionError: 'Unhandled',
  Payload: encode({ errorType, errorMessage, trace: [] }),
});

async function failureOf(p: Promise<unknown>): Promise<ToolFailure> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ToolFailure) return err;
    throw err;
  }
  throw new Error('expected a ToolFailure');
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('runCodeOnLambda', () => {
  it('sends the code and limits to the named function and returns its /run_code answer', async () => {
    // GIVEN an Invoke that runs the real handler in this process, as Lambda would in the runner's
    const sent: { fn: string; payload: unknown }[] = [];
    const invoke: Invoke = async (fn, payload) => {
      sent.push({ fn, payload: JSON.parse(payload) });
      return {
        Payload: encode(await handler(JSON.parse(payload), { getRemainingTimeInMillis: () => 299_000 })),
      };
    };
    // WHEN the tool runs a program there
    const res = await runCodeOnLambda(invoke, 'toolrl-dev-code-runner', {
      code: 'print(sum(range(5)))',
      limits: { wallS: 5, maxOutputBytes: 1000 },
    });
    // THEN one call, to that function, with the request as JSON; 0+1+2+3+4 = 10 comes back
    expect(sent).toEqual([
      {
        fn: 'toolrl-dev-code-runner',
        payload: { code: 'print(sum(range(5)))', limits: { wallS: 5, maxOutputBytes: 1000 } },
      },
    ]);
    expect(interpretRun(res)).toBe('10\n');
  });

  it('reports a runner that ran past its function timeout as a timeout', async () => {
    const invoke: Invoke = async () =>
      failed('Sandbox.Timedout', 'RequestId: 1 Error: Task timed out after 300.00 seconds');
    expect(await failureOf(runCodeOnLambda(invoke, 'runner', { code: 'pass' }))).toMatchObject({
      type: 'timeout',
      message:
        'the code runner ran past its function timeout: RequestId: 1 Error: Task timed out after 300.00 seconds',
    });
  });

  it('reports any other function error with its type and message', async () => {
    const invoke: Invoke = async () => failed('Runtime.ImportModuleError', "Cannot find module 'x'");
    expect(await failureOf(runCodeOnLambda(invoke, 'runner', { code: 'pass' }))).toMatchObject({
      type: 'internal_error',
      message: "the code runner failed (Runtime.ImportModuleError): Cannot find module 'x'",
    });
  });

  it('reports throttling as rate_limited and other invoke errors as internal errors naming the function', async () => {
    const throwing =
      (name: string, message: string): Invoke =>
      async () => {
        throw Object.assign(new Error(message), { name });
      };
    expect(
      await failureOf(
        runCodeOnLambda(throwing('TooManyRequestsException', 'Rate Exceeded.'), 'r', { code: '' }),
      ),
    ).toMatchObject({
      type: 'rate_limited',
      message: 'the code runner is at its concurrency limit: Rate Exceeded.',
    });
    expect(
      await failureOf(
        runCodeOnLambda(throwing('AccessDeniedException', 'not authorized'), 'toolrl-dev-code-runner', {
          code: '',
        }),
      ),
    ).toMatchObject({
      type: 'internal_error',
      message: 'cannot invoke the code runner toolrl-dev-code-runner: AccessDeniedException: not authorized',
    });
  });

  it('refuses an answer that is not a /run_code response', async () => {
    for (const Payload of [encode({ statusCode: 200 }), new TextEncoder().encode('not json'), undefined]) {
      const f = await failureOf(runCodeOnLambda(async () => ({ Payload }), 'r', { code: 'pass' }));
      expect(f.type).toBe('internal_error');
      expect(f.message).toMatch(/^the code runner answered in an unexpected shape: /);
    }
  });

  it('gives up when the caller aborts, with the reason the caller gave', async () => {
    // GIVEN an invocation that only ends when its signal aborts (as the SDK's send does)
    const invoke: Invoke = (_fn, _payload, signal) =>
      new Promise((_, reject) =>
        signal?.addEventListener('abort', () => reject(new Error('Request aborted'))),
      );
    const controller = new AbortController();
    const reason = new ToolFailure('timeout', 'the tool did not finish within 30 s');
    const running = runCodeOnLambda(invoke, 'r', { code: 'while True: pass' }, controller.signal);
    controller.abort(reason);
    await expect(running).rejects.toBe(reason);
  });
});

describe('code_interpreter with a code runner named', () => {
  it('invokes the runner instead of running the code in this process', async () => {
    // GIVEN the tool-call function's variable and a Lambda endpoint nothing listens on
    vi.stubEnv('AWS_ENDPOINT_URL', 'http://127.0.0.1:9');
    vi.stubEnv('AWS_REGION', 'us-east-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'test');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'test');
    const registry = await buildToolRegistry(
      { tools: [{ kind: 'code_interpreter', config: {} }] },
      { env: { [FUNCTION_ENV.codeRunnerFunction]: 'toolrl-test-code-runner' } },
    );
    try {
      // WHEN the model runs a program
      const r = await registry.call({ name: 'code_interpreter', arguments: { code: 'print(1)' } });
      // THEN the call went to Lambda (and failed there, naming the runner), not to a local sandbox that prints 1
      expect(r.ok).toBe(false);
      expect(r.error?.type).toBe('internal_error');
      expect(r.error?.message).toMatch(/^cannot invoke the code runner toolrl-test-code-runner: /);
    } finally {
      await registry.close();
    }
  });
});
