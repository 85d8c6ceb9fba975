// The BFCL environment process and its Python environment: created from the pinned lock (without bfcl-eval's
// declared dependencies), requests answered by id, refusals and crashes reported, restarted on demand.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BfclEnv, BfclEnvError } from '#shared/bfcl/client';
import { bfclEntryOf } from '#shared/bfcl/entry';
import { DEFAULT_BFCL_ENV_DIR, ensureBfclEnv, readyBfclPython } from '#shared/bfcl/env';
import type { BfclEntry } from '#shared/bfcl/protocol';
import { fixtureRow } from './helpers.ts';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

const entry: BfclEntry = {
  id: 'multi_turn_base_0',
  initialConfig: {
    GorillaFileSystem: {
      root: { home: { type: 'directory', contents: { a: { type: 'directory', contents: {} } } } },
    },
  },
  involvedClasses: ['GorillaFileSystem'],
};

let env: BfclEnv;
beforeAll(async () => {
  await ensureBfclEnv();
  env = new BfclEnv();
});
afterAll(async () => env?.close());

describe('the Python environment', () => {
  it('is created from the lock into a fresh folder once, then reused', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'bfcl-env-test-')), 'env');
    try {
      const lines: string[] = [];
      const first = await ensureBfclEnv({ envDir: dir, log: (l) => lines.push(l) });
      expect(first).toEqual({ python: join(dir, 'bin', 'python'), created: true });
      expect(lines[0]).toMatch(/installing bfcl-eval/);
      expect(await ensureBfclEnv({ envDir: dir })).toEqual({ python: first.python, created: false });
      // Only the pinned packages: none of bfcl-eval's declared dependencies (openai, anthropic, torch, ...).
      const fresh = new BfclEnv({ python: first.python });
      expect((await fresh.hello()).bfclEval).toBe('2026.3.23');
      await fresh.close();
      const lib = join(dir, 'lib');
      const site = join(lib, readdirSync(lib).find((d) => d.startsWith('python'))!, 'site-packages');
      expect(existsSync(join(site, 'bfcl_eval'))).toBe(true);
      expect(['openai', 'anthropic', 'torch', 'numpy'].filter((p) => existsSync(join(site, p)))).toEqual([]);
    } finally {
      rmSync(join(dir, '..'), { recursive: true, force: true });
    }
  });

  it('uses a given interpreter as it is', async () => {
    expect(await ensureBfclEnv({ python: '/opt/bfcl/bin/python' })).toEqual({
      python: '/opt/bfcl/bin/python',
      created: false,
    });
  });
});

describe('the environment process', () => {
  it('answers with BFCL’s version and the multi-turn classes', async () => {
    expect(await env.hello()).toMatchObject({
      bfclEval: '2026.3.23',
      classes: [
        'GorillaFileSystem',
        'MathAPI',
        'MessageAPI',
        'TwitterAPI',
        'TicketAPI',
        'TradingBot',
        'TravelAPI',
        'VehicleControlAPI',
      ],
    });
  });

  it('runs calls after a history and says which raised', async () => {
    const results = await env.execute(
      entry,
      [{ name: 'cd', arguments: { folder: 'a' } }],
      [
        { name: 'pwd', arguments: {} },
        { name: 'mkdir', arguments: { dir_name: 'b', extra: 1 } },
      ],
    );
    expect(results).toEqual([
      { output: '{"current_working_directory": "/home/a"}', raised: false },
      {
        output: expect.stringMatching(/^Error during execution: .*unexpected keyword argument 'extra'/),
        raised: true,
      },
    ]);
  });

  it('refuses what it cannot run safely, naming it', async () => {
    const refuse = (p: Promise<unknown>, message: RegExp) =>
      expect(p).rejects.toSatisfy(
        (e) => e instanceof BfclEnvError && e.type === 'bad_request' && message.test(e.message),
      );
    await refuse(
      env.execute(entry, [], [{ name: 'eval', arguments: {} }]),
      /'eval' is not a function of this entry/,
    );
    await refuse(
      env.execute(entry, [], [{ name: 'ls', arguments: { 'a)+(': 1 } }]),
      /not a Python identifier/,
    );
    await refuse(
      env.execute({ ...entry, involvedClasses: ['WebSearchAPI'] }, [], []),
      /'WebSearchAPI' is not a BFCL multi-turn class/,
    );
    await refuse(env.parse(entry, ["open('/etc/passwd')"]), /not a function of this entry/);
    await refuse(env.parse(entry, ['ls(a=print)']), /not a literal/);
    expect(await env.parse(entry, ['ls(True)', "cd('a')"])).toEqual([
      { name: 'ls', arguments: { a: true } },
      { name: 'cd', arguments: { folder: 'a' } },
    ]);
  });

  it('uses BFCL’s own initial_config, with its exact number types, when the row’s equals it', async () => {
    // multi_turn_base_71 starts with fuelLevel 5.0; read through JavaScript it is 5. Filling 45 must print 50.0, as
    // BFCL prints it (its ground truth results are compared as strings); a config that differs is used as given.
    const row = await fixtureRow('multi_turn_base_71');
    const base = bfclEntryOf(row.extra_info);
    expect((base.initialConfig.VehicleControlAPI as { fuelLevel: number }).fuelLevel).toBe(5);
    const fill = [{ name: 'fillFuelTank', arguments: { fuelAmount: 45 } }];
    expect(await env.execute(base, [], fill)).toEqual([{ output: '{"fuelLevel": 50.0}', raised: false }]);
    const vehicle = { ...(base.initialConfig.VehicleControlAPI as object), fuelLevel: 4 };
    const changed = { ...base, initialConfig: { VehicleControlAPI: vehicle } };
    expect(await env.execute(changed, [], fill)).toEqual([{ output: '{"fuelLevel": 49}', raised: false }]);
  });

  it('reports a process that cannot start or dies, and starts again on the next request', async () => {
    await expect(new BfclEnv({ python: '/nonexistent/python' }).hello()).rejects.toThrow(
      /BFCL environment process \(\/nonexistent\/python\) could not start/,
    );
    await expect(new BfclEnv({ python: 'false' }).hello()).rejects.toThrow(/exited \(code 1\)/);
    const again = new BfclEnv();
    await again.hello();
    await again.close();
    expect((await again.hello()).classes).toHaveLength(8);
    await again.close();
  });
});

describe('readyBfclPython (what `dataset convert --from bfcl` uses, installing nothing)', () => {
  it('an explicit interpreter if it exists, else the environment `toolrl bfcl setup` made if current, else null', () => {
    const saved = process.env.TOOLRL_BFCL_PYTHON;
    delete process.env.TOOLRL_BFCL_PYTHON;
    try {
      const empty = mkdtempSync(join(tmpdir(), 'bfcl-env-none-'));
      expect(readyBfclPython(undefined, empty)).toBeNull(); // never set up
      expect(readyBfclPython(join(empty, 'bin', 'python'))).toBeNull(); // a path that is not there
      expect(readyBfclPython('python3')).toBe('python3'); // a command, found on PATH when run
      // beforeAll made the default environment, stamped with the current lock (unless an interpreter was given)
      if (saved === undefined)
        expect(readyBfclPython(undefined)).toBe(join(DEFAULT_BFCL_ENV_DIR, 'bin', 'python'));
      rmSync(empty, { recursive: true, force: true });
    } finally {
      if (saved !== undefined) process.env.TOOLRL_BFCL_PYTHON = saved;
    }
  });
});
