// code_interpreter through the built-in sandbox in-process, and through the SandboxFusion client
// against `toolrl sandbox serve` (a real server process), giving the same results.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { interpretRun } from '#shared/tools/code/tool';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { type CliServer, startCliServer } from './cli-server.ts';

let server: CliServer;
let local: ToolRegistry;
let remote: ToolRegistry;
beforeAll(async () => {
  server = await startCliServer(['sandbox', 'serve']);
  const limits = { run_timeout: 2, max_output_bytes: 2000, memory_limit_mb: 256 };
  local = await buildToolRegistry({ tools: [{ kind: 'code_interpreter', config: limits }] });
  remote = await buildToolRegistry({
    tools: [{ kind: 'code_interpreter', config: { ...limits, sandbox_fusion_url: server.url } }],
  });
});
afterAll(async () => {
  await server.stop();
  await local.close();
  await remote.close();
});

const run = (reg: ToolRegistry, code: string) => reg.call({ name: 'code_interpreter', arguments: { code } });

describe('code_interpreter', () => {
  it('returns what the program prints', async () => {
    for (const reg of [local, remote])
      expect(await run(reg, 'import math\nprint(math.comb(10, 3))')).toEqual({
        ok: true,
        output: '120\n',
        error: null,
        truncated: false,
      });
  });

  it('reports an exception with its traceback', async () => {
    for (const reg of [local, remote]) {
      const r = await run(reg, 'print("before")\nraise ValueError("boom")');
      expect(r.ok).toBe(false);
      expect(r.error).toEqual({ type: 'execution_error', message: 'the program exited with status 1' });
      expect(r.output).toMatch(/^before\nTraceback \(most recent call last\):\n {2}File "main.py", line 2/);
      expect(r.output).toContain('ValueError: boom');
    }
  });

  it('reports a timeout and the limits by name', async () => {
    for (const [reg, cap] of [
      [local, 2000],
      [remote, 64 * 1024],
    ] as const) {
      expect((await run(reg, 'while True: pass')).error).toEqual({
        type: 'timeout',
        message: 'the program ran past its time limit and was stopped',
      });
      expect((await run(reg, 'x = bytearray(1 << 30)')).error).toEqual({
        type: 'resource_limit',
        message: 'the program ran out of memory (memory limit reached)',
      });
      const flood = await run(reg, 'while True: print("z" * 100)');
      expect(flood.error?.type).toBe('resource_limit');
      expect(flood.output.length).toBeLessThanOrEqual(cap); // max_output_bytes is the built-in sandbox's; the server has its own
    }
  });

  it('says when nothing was printed', async () => {
    expect((await run(local, 'x = 1')).output).toBe('(no output; print() the values you want to see)');
  });

  it("answers SandboxFusion's /run_code shape and refuses other languages as a SandboxError", async () => {
    const post = (body: unknown) =>
      fetch(server.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' }, // as verl's SandboxFusion client sends it
        body: JSON.stringify(body),
      }).then((r) => r.json());
    expect(await post({ code: 'print(2+2)', language: 'python' })).toMatchObject({
      status: 'Success',
      compile_result: null,
      run_result: { status: 'Finished', return_code: 0, stdout: '4\n', stderr: '' },
    });
    expect(await post({ code: 'console.log(1)', language: 'nodejs' })).toMatchObject({
      status: 'SandboxError',
    });
    expect(() => interpretRun({ status: 'SandboxError', message: 'no pods', files: {} })).toThrow(
      /sandbox error: no pods/,
    );
  });
});
