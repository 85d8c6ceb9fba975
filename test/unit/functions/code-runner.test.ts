// The code runner's Lambda entry on a request as the tool-call stage sends it (test/fixtures/events): real Python
// through the built-in sandbox, answered in SandboxFusion's `/run_code` shape, which the code_interpreter reads
// exactly as it reads SandboxFusion's; the program's wall clock ends before the function's own timeout.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { handler } from '#functions/code-runner/index';
import { CodeRunnerRequestSchema } from '#shared/tools/code/lambda-runner';
import { interpretRun } from '#shared/tools/code/tool';
import { ToolFailure } from '#shared/tools/types';

const fixture = JSON.parse(
  readFileSync(join(import.meta.dirname, '../../fixtures/events/code-runner-request.json'), 'utf8'),
) as Record<string, unknown>;

/** A Lambda context with this much time left. */
const contextWith = (ms: number) => ({ getRemainingTimeInMillis: () => ms });

describe('functions/code-runner', () => {
  it('runs the program of a request and answers what the tool reads', async () => {
    // GIVEN the fixture (a request the tool-call stage sends: code and the tool's limits)
    expect(CodeRunnerRequestSchema.parse(fixture).limits.wallS).toBe(10);
    // WHEN the runner handles it with most of a 300 s function timeout left
    const res = await handler(fixture, contextWith(299_000));
    // THEN the program ran: C(10, 3) = 10*9*8 / 3! = 120
    expect(res).toMatchObject({
      status: 'Success',
      message: '',
      run_result: { status: 'Finished', return_code: 0, stdout: '120\n', stderr: '' },
      limit: null,
    });
    expect(interpretRun(res)).toBe('120\n');
  });

  it('returns a failing program with its traceback for the model to read', async () => {
    const res = await handler({ code: 'print("before")\nraise ValueError("boom")' }, contextWith(299_000));
    expect(res).toMatchObject({ status: 'Failed', run_result: { return_code: 1, stdout: 'before\n' } });
    expect(res.run_result?.stderr).toContain('ValueError: boom');
    const failure = (() => {
      try {
        interpretRun(res);
      } catch (err) {
        return err as ToolFailure;
      }
    })();
    expect(failure).toBeInstanceOf(ToolFailure);
    expect(failure).toMatchObject({ type: 'execution_error', message: 'the program exited with status 1' });
    expect(failure?.output).toContain('ValueError: boom');
  });

  it("stops the program before the function's timeout, whatever wall clock the request asks for", async () => {
    // GIVEN 7.5 s left in the invocation and a request for 60 s: the wall clock is 7.5 - 5 (the margin) = 2.5 s
    const started = performance.now();
    const res = await handler(
      { code: 'while True: pass', limits: { wallS: 60, cpuS: 60 } },
      contextWith(7_500),
    );
    const tookS = (performance.now() - started) / 1000;
    expect(res).toMatchObject({ status: 'Failed', limit: 'wall_time' });
    expect(res.run_result?.status).toBe('TimeLimitExceeded');
    expect(tookS).toBeGreaterThanOrEqual(2.4);
    expect(tookS).toBeLessThan(7.5);
  });

  it('applies the limits the request carries', async () => {
    const res = await handler(
      { code: 'print("x" * 5000)', limits: { maxOutputBytes: 100 } },
      contextWith(299_000),
    );
    expect(res).toMatchObject({ status: 'Failed', limit: 'output' });
    expect(res.run_result?.stdout).toHaveLength(100);
  });

  it('refuses a malformed request, naming the field', async () => {
    const res = await handler({ code: 42, limits: { wallS: -1 } }, contextWith(299_000));
    expect(res.status).toBe('SandboxError');
    expect(res.message).toMatch(/^bad code-runner request:/);
    expect(res.message).toMatch(/code/);
    expect(res.message).toMatch(/limits\.wallS/);
  });
});
