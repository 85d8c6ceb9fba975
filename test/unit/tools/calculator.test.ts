// The calculator evaluates arithmetic and nothing else: no JavaScript, no definitions, bounded time.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Calculator } from '#shared/tools/calculator/tool';
import { defineToolKind } from '#shared/tools/kind';
import { registerToolKind } from '#shared/tools/kinds';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import type { ToolContext } from '#shared/tools/types';
import { tempDirs } from '../../helpers/temp-dirs.ts';

// Budgets far above what these expressions take (microseconds), so that a machine starved by other work
// (a fresh worker loading mathjs took minutes here once) cannot fail them; the hostile-input test has its own.
let reg: ToolRegistry;
beforeAll(async () => {
  reg = await buildToolRegistry({
    tools: [{ kind: 'calculator', config: { max_eval_ms: 60_000, timeout: 600, num_workers: 2 } }],
  });
});
afterAll(() => reg.close());

const tempDir = tempDirs();

const calc = (expression: string) => reg.call({ name: 'calculator', arguments: { expression } });

// A fresh worker loads mathjs before its first answer: on a starved machine that alone took minutes.
describe('calculator', () => {
  it.each([
    ['17 * 23', '391'],
    ['2^10 mod 7', '2'], // 1024 = 146*7 + 2
    ['sqrt(16) + 3!', '10'], // 4 + 6
    ['round(pi, 3)', '3.142'],
    ['(1 + 2) / 4', '0.75'],
    ['gcd(84, 36)', '12'],
    ['1 inch to cm', '2.54 cm'],
    ['max(3, 9, 2)', '9'],
    // plain digits where a model must copy the result: mathjs's default would print 1.82262e+5
    ['821 * 222', '182262'],
    ['3 * 0.000001', '0.000003'],
    ['10^30', '1e+30'], // past 1e21 the exponent is shorter than the digits
    // Python's operators and math module, and typeset signs: what the ToolRL seed's eval() took and models write
    ['2**10', '1024'],
    ['-2**2', '-4'], // Python: ** binds tighter than unary minus
    ['2**3**2', '512'], // right-associative
    ['10 // 3', '3'],
    ['-7 // 2', '-4'], // floor, not truncation
    ['7.5 // 2', '3'],
    ['10 % 3', '1'],
    ['-7 % 3', '2'], // Python's sign rule
    ['2 * 10 // 3 + 1', '7'], // // binds like * and /, left to right: (20 // 3) + 1
    ['25 × 37', '925'],
    ['100 ÷ 8', '12.5'],
    ['7 − 10', '-3'],
    ['math.sqrt(16) + math.pi * 0', '4'],
    ['math.floor(7 / 2) + math.ceil(0.2)', '4'],
    ['math.comb(5, 2)', '10'],
    ['math.factorial(5)', '120'],
    ['math.log(8, 2)', '3'],
    ['int(7.9) + math.isqrt(17)', '11'], // 7 + 4
    ['abs(-3) + pow(2, 3)', '11'],
  ])('%s = %s', async (expression, expected) => {
    expect(await calc(expression)).toEqual({ ok: true, output: expected, error: null, truncated: false });
  });

  it.each([
    ['import({x: 1}, {override: true})', /function import is not available/],
    ['evaluate("1+1")', /function evaluate is not available/],
    ['parse("1")', /function parse is not available/],
    ['createUnit("foo")', /function createUnit is not available/],
    ['f(x) = x^2', /function definition is not allowed/],
    ['a = 5', /assignment is not allowed/],
    ['cos.constructor("return process")', /function constructor is not available/],
    ['sin["constructor"]', /property access is not allowed|indexing is not allowed/],
    ['[1,2].map', /not allowed/],
    ['{a: 1}', /an object is not allowed/],
    ['1:1e9', /a range is not allowed/],
    ['sqrt', /unknown symbol sqrt/],
    ['x + 1', /unknown symbol x/],
    // Python's syntax brings no way out: attribute access beyond `math.`, calls of unknown names, imports
    ['__import__("os")', /not available|unknown|Syntax|Unexpected/],
    ['math.__class__', /unknown symbol|not allowed|Syntax|Unexpected/],
    ['os.system("ls")', /not allowed|not available|unknown/],
    ['(lambda: 1)()', /Value expected|not allowed|unknown/],
  ])('refuses %s', async (expression, message) => {
    const r = await calc(expression);
    expect(r.ok).toBe(false);
    expect(r.error?.type).toBe('execution_error');
    expect(r.error?.message).toMatch(message);
  });

  it('bounds evaluation time on hostile input and keeps working afterwards', async () => {
    // 60 primality tests of a 16-digit prime, each ~0.25 s on a quiet machine: ~15 s of work against the 500 ms
    // budget, 30x over it, so no machine is fast enough to finish (two of them, 0.5-0.7 s, sometimes did), and
    // a loaded one only takes longer. The expression stays inside the size limits (1,795 characters).
    const hostile = Array.from({ length: 60 }, () => 'isPrime(9007199254740881)').join(' and ');
    const tight = await buildToolRegistry({
      tools: [{ kind: 'calculator', config: { max_eval_ms: 500, timeout: 600, num_workers: 1 } }],
    });
    const call = (expression: string) => tight.call({ name: 'calculator', arguments: { expression } });
    expect((await call(hostile)).error).toEqual({
      type: 'resource_limit',
      message: 'expression took longer than 500 ms to evaluate',
    });
    // the runaway worker was terminated; a fresh one answers
    expect((await call('1 + 1')).output).toBe('2');
    await tight.close();
  });

  it('counts only the time the worker spends on the expression, not a wait before its thread runs', async () => {
    // A worker whose thread is held for 3 s after each expression arrives, before evaluating it (what a loaded
    // machine did to the quickstart's validation: a 1 s budget timed out '17 * 23' and changed a seeded answer);
    // the budget is 1.5 s. Before the fix the clock ran from the post and the call failed with resource_limit.
    const dir = tempDir('calc-held-');
    const real = new URL('../../../shared/tools/calculator/worker.mjs', import.meta.url).href;
    const held = join(dir, 'held-worker.mjs');
    writeFileSync(
      held,
      [
        "import { parentPort } from 'node:worker_threads';",
        'const hold = new Int32Array(new SharedArrayBuffer(4));',
        "parentPort.on('message', () => Atomics.wait(hold, 0, 0, 3000));",
        `await import(${JSON.stringify(real)});`,
      ].join('\n'),
    );
    const calculator = new Calculator(1500, 64, pathToFileURL(held));
    const ctx: ToolContext = {
      signal: new AbortController().signal,
      clock: () => new Date(),
      timeoutMs: 600_000,
    };
    expect(await calculator.execute({ expression: '17 * 23' }, ctx)).toBe('391');
    await calculator.close();
  });

  it('bounds the expression size', async () => {
    const r = await calc('1+'.repeat(1500) + '1');
    expect(r.error?.type).toBe('invalid_arguments');
    const nodes = await calc(Array.from({ length: 500 }, () => '1').join('+'));
    expect(nodes.error?.message).toMatch(/too large/);
  });

  it('validates arguments before evaluating', async () => {
    expect((await reg.call({ name: 'calculator', arguments: { expr: '1' } })).error?.type).toBe(
      'invalid_arguments',
    );
    expect((await calc('   ')).error?.message).toBe('expression is empty');
  });

  it("starts the call's time limit after the worker has loaded, so a slow start-up cannot time a call out", async () => {
    // A worker that takes 2 s to start (as a fresh one loading mathjs did on a loaded machine), then the real one;
    // the call's limit is 0.3 s. Before the fix the registry's clock ran during the start-up and the call timed out.
    const dir = tempDir('calc-slow-');
    const real = new URL('../../../shared/tools/calculator/worker.mjs', import.meta.url).href;
    const slow = join(dir, 'slow-worker.mjs');
    writeFileSync(
      slow,
      `await new Promise((r) => setTimeout(r, 2000));\nawait import(${JSON.stringify(real)});\n`,
    );
    registerToolKind(
      defineToolKind({
        kind: 'calculator_slow_start',
        defaults: { timeoutS: 15, numWorkers: 1 },
        config: z.object({}),
        build: () => ({ tools: [new Calculator(60_000, 64, pathToFileURL(slow))] }),
      }),
    );
    const slowReg = await buildToolRegistry({
      tools: [{ kind: 'calculator_slow_start', config: { timeout: 0.3, max_retries: 0 } }],
    });
    const call = (expression: string) => slowReg.call({ name: 'calculator', arguments: { expression } });
    expect(await call('17 * 23')).toEqual({ ok: true, output: '391', error: null, truncated: false });
    // Once started, the evaluation is held to the call's limit (0.3 s here, below max_eval_ms).
    const hostile = Array.from({ length: 60 }, () => 'isPrime(9007199254740881)').join(' and ');
    expect((await call(hostile)).error).toEqual({
      type: 'timeout',
      message: 'the tool did not finish within 0.3s',
    });
    await slowReg.close();
  });
});
