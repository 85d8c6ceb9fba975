// code_interpreter through the built-in sandbox in-process, and through the SandboxFusion client
// against `toolrl sandbox serve` (a real server process), giving the same results.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { resolveToolSpecs } from '#shared/config/resolve';
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

  it('has numpy and sympy at the versions the AWS code runner pins (npm run setup installs them)', async () => {
    // The lock is what setup installs and what infra/docker/tool-call pins; the program runs in the sandbox as a
    // model's would, so this fails if the venv is missing or the sandbox cannot read it.
    const lock = readFileSync(
      new URL('../../../shared/tools/code/requirements.lock', import.meta.url),
      'utf8',
    );
    const pin = (name: string) => lock.match(new RegExp(`^${name}==(\\S+)`, 'm'))?.[1];
    const dockerfile = readFileSync(
      new URL('../../../infra/docker/tool-call/Dockerfile', import.meta.url),
      'utf8',
    );
    expect(dockerfile).toContain(`numpy==${pin('numpy')} sympy==${pin('sympy')}`);
    // A wide time limit: this checks what is installed, not how fast a loaded machine imports it.
    const reg = await buildToolRegistry({
      tools: [{ kind: 'code_interpreter', config: { run_timeout: 120 } }],
    });
    try {
      const code =
        'import numpy as np, sympy as sp\nx = sp.symbols("x")\n' +
        'print(np.__version__, sp.__version__, int(np.arange(5).sum()), sp.solve(x**2 - 4, x))';
      expect(await run(reg, code)).toMatchObject({
        ok: true,
        output: `${pin('numpy')} ${pin('sympy')} 10 [-2, 2]\n`,
      });
    } finally {
      await reg.close();
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

describe("verl's and MindSpeed-RL's code tool configs", () => {
  /** MindSpeed-RL's retool_config.yaml verbatim, its SandboxFusion URL pointed at this test's server. */
  const retoolConfig = (url: string | null) => {
    const file = parseYaml(
      readFileSync(new URL('../../fixtures/seeds/mindspeed-rl/retool_config.yaml', import.meta.url), 'utf8'),
    ) as { tools: { class_name: string; config: Record<string, unknown> }[] };
    const [tool] = file.tools;
    const config = { ...tool!.config };
    if (url === null) delete config.sandbox_fusion_url;
    else config.sandbox_fusion_url = url;
    // As a run reads it: the class in toolrl's names (the resolver, shared/config).
    return { tools: resolveToolSpecs([{ ...tool!, config }]) };
  };

  it('ReTool (mindspeed_rl.tools.retool.ReTool) strips the ```python fence and prints a trailing expression', async () => {
    const local1 = await buildToolRegistry(retoolConfig(null));
    const remote1 = await buildToolRegistry(retoolConfig(server.url));
    try {
      for (const reg of [local1, remote1]) {
        const fenced = 'Let me compute.\n```python\nimport math\nx = math.comb(10, 3)\nx * 2\n```';
        expect(await run(reg, fenced)).toMatchObject({ ok: true, output: '240\n' });
        // a trailing call that prints returns None: printed once; an assignment last prints nothing
        expect((await run(reg, 'print(7)')).output).toBe('7\n');
        expect((await run(reg, 'y = 3')).output).toBe('(no output; print() the values you want to see)');
        // a multi-line trailing expression (ReTool's line rewrite would break it)
        expect((await run(reg, 'sorted(\n  [3, 1, 2]\n)')).output).toBe('[1, 2, 3]\n');
        // errors read as plain python's: the line of the user's code, no wrapper frame
        const err = await run(reg, 'a = 1\n1 / 0');
        expect(err.error?.type).toBe('execution_error');
        expect(err.output).toMatch(
          /^Traceback \(most recent call last\):\n {2}File "main.py", line 2, in <module>\n {4}1 \/ 0/,
        );
        expect(err.output).not.toContain('__toolrl');
        const syntax = await run(reg, 'x = (');
        expect(syntax.output).toMatch(/File "main.py", line 1[\s\S]*SyntaxError/);
      }
    } finally {
      await Promise.all([local1.close(), remote1.close()]);
    }
  });

  it('the plain SandboxFusionTool runs code as it is (no fence stripping, nothing printed for it)', async () => {
    const reg = await buildToolRegistry({
      tools: resolveToolSpecs([
        { class_name: 'verl.tools.sandbox_fusion_tools.SandboxFusionTool', config: { type: 'native' } },
      ]),
    });
    try {
      expect((await run(reg, '6 * 7')).output).toBe('(no output; print() the values you want to see)');
      expect((await run(reg, '```python\nprint(1)\n```')).error?.type).toBe('execution_error');
    } finally {
      await reg.close();
    }
  });

  it('default_timeout and memory_limit_mb reach the sandbox', async () => {
    const reg = (config: Record<string, unknown>) =>
      buildToolRegistry({ tools: [{ kind: 'code_interpreter', config }] });
    // The CPU limit the program runs under is the run's time limit: verl's default_timeout: 30, not 10.
    const thirty = await reg({ default_timeout: 30, memory_limit_mb: 1024 });
    const short = await reg({ default_timeout: 1, memory_limit_mb: 128 });
    const small = await reg({ default_timeout: 30, memory_limit_mb: 128 });
    try {
      expect(
        (await run(thirty, 'import resource\nprint(resource.getrlimit(resource.RLIMIT_CPU)[0])')).output,
      ).toBe('30\n');
      // The sandbox stops the program at 1 s and says so (the registry's own timeout comes later).
      expect((await run(short, 'import time\ntime.sleep(5)')).error).toEqual({
        type: 'timeout',
        message: 'the program ran past its time limit and was stopped',
      });
      // 200 MB fits 1024 MB and not 128 MB (a wide time limit: a loaded machine must not turn this into a timeout).
      const alloc = 'x = bytearray(200 * 1024 * 1024)\nprint(len(x) // 2**20)';
      expect((await run(thirty, alloc)).output).toBe('200\n');
      expect((await run(small, alloc)).error?.type).toBe('resource_limit');
    } finally {
      await Promise.all([thirty.close(), short.close(), small.close()]);
    }
  });
});
