// `toolrl sandbox serve` (a real server process) runs each request under its own `run_timeout` and
// `memory_limit_MB`, as SandboxFusion does, up to the maxima the operator gives it (`--max-timeout`,
// `--max-memory-mb`). The client is MindSpeed-RL's retool_config.yaml verbatim (default_timeout: 30,
// memory_limit_mb: 1024), its URL pointed at the test's server. The limits a program runs under are read from
// inside it (its RLIMIT_CPU is its run's time limit, its RLIMIT_AS the run's memory), so no assertion here rests
// on how fast the machine is; the one sleep checks that 12 s under a 30 s limit is not cut at the old 10 s.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { resolveToolSpecs } from '#shared/config/resolve';
import { requestLimits } from '#shared/tools/code/server';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { type CliServer, startCliServer } from './cli-server.ts';

const retoolConfig = (url: string) => {
  const file = parseYaml(
    readFileSync(new URL('../../fixtures/seeds/mindspeed-rl/retool_config.yaml', import.meta.url), 'utf8'),
  ) as { tools: { class_name: string; config: Record<string, unknown> }[] };
  const [tool] = file.tools;
  expect(tool!.config).toMatchObject({ default_timeout: 30, memory_limit_mb: 1024 });
  // As a run reads it: the class in toolrl's names (the resolver, shared/config).
  return { tools: resolveToolSpecs([{ ...tool!, config: { ...tool!.config, sandbox_fusion_url: url } }]) };
};

/** The limits the program runs under, as it sees them: CPU seconds and address space in MiB. */
const SHOW_LIMITS =
  'import resource\n' +
  'print(resource.getrlimit(resource.RLIMIT_CPU)[0], resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20)';

const call = (reg: ToolRegistry, code: string) => reg.call({ name: 'code_interpreter', arguments: { code } });

const post = (url: string, body: Record<string, unknown>) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ language: 'python', ...body }),
  }).then((r) => r.json() as Promise<Record<string, unknown>>);

describe('the limits of one request', () => {
  it("take the request's run_timeout (SandboxFusion's 10 s without one) and memory_limit_MB, clamped to the maxima", () => {
    const max = { wallS: 300, memoryMb: 4096 };
    expect(requestLimits({}, max)).toEqual({ wallS: 10, memoryMb: 4096 });
    expect(requestLimits({ run_timeout: 30, memory_limit_MB: 1024 }, max)).toEqual({
      wallS: 30,
      memoryMb: 1024,
    });
    expect(requestLimits({ run_timeout: 1000, memory_limit_MB: 10_000 }, max)).toEqual({
      wallS: 300,
      memoryMb: 4096,
    });
    // SandboxFusion's -1 (its default) means no limit of the request's own: the server's maximum
    expect(requestLimits({ memory_limit_MB: -1 }, max).memoryMb).toBe(4096);
    expect(requestLimits({}, { wallS: 5, memoryMb: 256 })).toEqual({ wallS: 5, memoryMb: 256 });
  });
});

describe('toolrl sandbox serve with its default maxima', () => {
  let server: CliServer;
  let retool: ToolRegistry;
  beforeAll(async () => {
    server = await startCliServer(['sandbox', 'serve']);
    retool = await buildToolRegistry(retoolConfig(server.url));
  });
  afterAll(async () => {
    await retool?.close();
    await server?.stop();
  });

  it("runs MindSpeed-RL's ReTool calls under their default_timeout: 30 and memory_limit_mb: 1024", async () => {
    expect(await call(retool, SHOW_LIMITS)).toMatchObject({ ok: true, output: '30 1024\n' });
  });

  it('lets a program that sleeps 12 s (past the old 10 s cut) finish under the 30 s limit', {
    timeout: 120_000,
  }, async () => {
    expect(await call(retool, 'import time\ntime.sleep(12)\nprint("done")')).toMatchObject({
      ok: true,
      output: 'done\n',
    });
  });

  it("stops a program past the request's own run_timeout with SandboxFusion's status", {
    timeout: 60_000,
  }, async () => {
    const r = await post(server.url, { code: 'while True: pass', run_timeout: 1 });
    expect(r).toMatchObject({ status: 'Failed', run_result: { status: 'TimeLimitExceeded' } });
    // without run_timeout and memory_limit_MB: SandboxFusion's 10 s, and the server's maximum memory
    expect(await post(server.url, { code: SHOW_LIMITS })).toMatchObject({
      status: 'Success',
      run_result: { status: 'Finished', stdout: '10 4096\n' },
    });
    expect(
      await post(server.url, { code: SHOW_LIMITS, run_timeout: 45, memory_limit_MB: 512 }),
    ).toMatchObject({
      run_result: { stdout: '45 512\n' },
    });
  });
});

describe('toolrl sandbox serve --max-timeout 2 --max-memory-mb 256', () => {
  let server: CliServer;
  let retool: ToolRegistry;
  beforeAll(async () => {
    server = await startCliServer(['sandbox', 'serve', '--max-timeout', '2', '--max-memory-mb', '256']);
    retool = await buildToolRegistry(retoolConfig(server.url));
  });
  afterAll(async () => {
    await retool?.close();
    await server?.stop();
  });

  it('says its maxima when it starts', () => {
    expect(server.stdout()).toMatch(/run_timeout up to 2 s, memory_limit_MB up to 256\)/);
  });

  it("clamps the ReTool config's 30 s and 1024 MB to the server's maxima", { timeout: 60_000 }, async () => {
    expect(await call(retool, SHOW_LIMITS)).toMatchObject({ ok: true, output: '2 256\n' });
    // stopped at the server's 2 s, long before the 30 s asked for, and read by the model as a timeout
    // (its CPU limit is the same 2 s, so which of the two stops it is a race: both read as a timeout)
    expect((await call(retool, 'while True: pass')).error?.type).toBe('timeout');
    expect(await post(server.url, { code: 'while True: pass', run_timeout: 1000 })).toMatchObject({
      status: 'Failed',
      run_result: { status: 'TimeLimitExceeded' },
    });
  });

  it('refuses a maximum that is not a positive number', async () => {
    await expect(startCliServer(['sandbox', 'serve', '--max-timeout', '0'])).rejects.toThrow(
      /--max-timeout must be a positive number of seconds, not 0/,
    );
    await expect(startCliServer(['sandbox', 'serve', '--max-memory-mb', 'lots'])).rejects.toThrow(
      /--max-memory-mb must be a positive integer, not lots/,
    );
  });
});
