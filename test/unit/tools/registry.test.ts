// The registry's contract: schemas, validation before execution, limits, truncation, and every
// failure as a ToolResult (never an exception).

import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readToolsFile, resolveToolSpecs } from '#shared/config/resolve';
import { ToolResultSchema } from '#shared/schemas/tool-result';
import { buildToolRegistry } from '#shared/tools/registry';
import { renderToolResult } from '#shared/tools/render';

/** A local JSON service that counts concurrent requests and can be told to fail. */
let server: Server;
let url: string;
let active = 0;
let peak = 0;
let hits = 0;
let failFirst = 0;
const bodies: unknown[] = [];
beforeAll(async () => {
  server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body: unknown = JSON.parse(Buffer.concat(chunks).toString() || '{}');
    bodies.push(body);
    hits++;
    const counted = req.url === '/count'; // only this path's concurrency is measured
    if (counted) active++;
    peak = Math.max(peak, active);
    await new Promise((r) => setTimeout(r, req.url === '/slow' ? 2000 : 40));
    if (counted) active--;
    if (failFirst > 0) {
      failFirst--;
      res.writeHead(503).end('busy');
      return;
    }
    if (req.url === '/bad') return res.writeHead(400).end('no such thing');
    if (req.url === '/auth') return res.writeHead(200).end(`auth=${req.headers.authorization ?? 'none'}`);
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ result: `echo ${JSON.stringify(body)}`, n: hits }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => server.close());

const echoTool = (config: Record<string, unknown> = {}, path = '/echo') => ({
  kind: 'http',
  config: { url: `${url}${path}`, retry_backoff: 0.01, ...config },
  tool_schema: {
    type: 'function' as const,
    function: {
      name: 'echo',
      description: 'echo',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
        additionalProperties: false,
      },
    },
  },
});

// Other systems' class names and config keys reach the registry in toolrl's names: the resolver translates them
// where the config is read (shared/config), as every run does.
describe("the seeds' tool configs, verbatim", () => {
  const seedFile = (path: string) => new URL(`../../fixtures/seeds/${path}`, import.meta.url).pathname;
  it.each([
    ['mindspeed-rl/retool_config.yaml', 'code_interpreter'],
    ['mindspeed-rl/search_tool_config.yaml', 'search'],
    ['verl/sandbox_fusion_tool_config.yaml', 'code_interpreter'],
    ['verl/search_tool_config.yaml', 'search'],
  ])('%s builds its %s tool with the schema it declares', async (file, name) => {
    const tools = readToolsFile(readFileSync(seedFile(file), 'utf8'), file);
    const reg = await buildToolRegistry({ tools });
    expect(reg.names()).toEqual([name]);
    expect(reg.schemas()[0]!.function.description).toMatch(/^(A tool for executing code\.|Searches the web)/);
    await reg.close();
  });

  it('a tool name that is neither a kind, nor in the alias table, nor a dotted class is an error naming them', async () => {
    const tools = resolveToolSpecs([{ class_name: 'SearchToool', config: {} }]);
    expect(tools).toEqual([{ class_name: 'SearchToool', config: {} }]); // not another system's name: left as written
    await expect(buildToolRegistry({ tools })).rejects.toThrow(
      /unknown tool kind "SearchToool": not a built-in kind \(calculator, .*\); a Python class is `class_name: my_pkg\.module\.MyTool`/,
    );
  });

  it('a dotted class the alias table does not claim goes to the Python tool host', async () => {
    await expect(
      buildToolRegistry({ tools: [{ class_name: 'my_pkg.tools.SearchTool', config: {} }] }),
    ).rejects.toThrow(/my_pkg\.tools\.SearchTool: cannot import my_pkg\.tools/);
  });
});

describe('buildToolRegistry', () => {
  it("has the issue's defaults with no config", async () => {
    const reg = await buildToolRegistry();
    expect(reg.names()).toEqual([
      'calculator',
      'get_current_time',
      'weather_query',
      'search',
      'code_interpreter',
    ]);
    for (const s of reg.schemas())
      expect(s).toMatchObject({ type: 'function', function: { parameters: { type: 'object' } } });
    await reg.close();
  });

  it('accepts verl-style class names and config keys', async () => {
    const reg = await buildToolRegistry({
      tools: resolveToolSpecs([
        {
          class_name: 'verl.tools.sandbox_fusion_tools.SandboxFusionTool',
          config: {
            num_workers: 2,
            rate_limit: 10,
            default_timeout: 30,
            type: 'native',
            memory_limit_mb: 512,
          },
        },
        { class_name: 'verl.tools.search_tool.SearchTool', config: { topk: 2 } },
      ]),
    });
    expect(reg.names()).toEqual(['code_interpreter', 'search']);
    await reg.close();
  });

  it('fails at build time, naming the tool and key, on a bad config', async () => {
    await expect(buildToolRegistry({ tools: [{ kind: 'telepathy', config: {} }] })).rejects.toThrow(
      /unknown tool kind "telepathy"/,
    );
    await expect(
      buildToolRegistry({ tools: [{ kind: 'calculator', config: { max_eval_ms: -1 } }] }),
    ).rejects.toThrow(/tool calculator: bad config: max_eval_ms/);
    await expect(buildToolRegistry({ tools: [{ kind: 'search', config: { top_k: 3 } }] })).rejects.toThrow(
      /tool search: bad config: .*top_k/,
    );
    await expect(
      buildToolRegistry({
        tools: [
          { kind: 'calculator', config: {} },
          { kind: 'calculator', config: {} },
        ],
      }),
    ).rejects.toThrow(/two tools are named calculator/);
  });

  it('reads a tool config file relative to the base dir', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tools-cfg-'));
    writeFileSync(
      join(dir, 'tools.yaml'),
      'tools:\n  - kind: calculator\n  - kind: get_current_time\n    config: {default_timezone: Europe/Paris}\n',
    );
    const reg = await buildToolRegistry(
      { config_file: 'tools.yaml' },
      { baseDir: dir, clock: () => new Date('2024-07-01T12:00:00Z') },
    );
    expect(reg.names()).toEqual(['calculator', 'get_current_time']);
    expect((await reg.call({ name: 'get_current_time', arguments: {} })).output).toBe(
      '2024-07-01T14:00:00+02:00 (Monday) Europe/Paris',
    );
    await reg.close();
  });
});

describe('ToolRegistry.call', () => {
  it('reports an unknown tool and bad arguments as results, never throwing', async () => {
    const reg = await buildToolRegistry({ tools: [echoTool()] });
    const unknown = await reg.call({ name: 'nope', arguments: {} });
    expect(unknown).toEqual({
      ok: false,
      output: '',
      error: { type: 'unknown_tool', message: 'unknown tool "nope"; available tools: echo' },
      truncated: false,
    });
    const before = hits;
    const bad = await reg.call({ name: 'echo', arguments: { txt: 'x' } });
    expect(bad.error).toEqual({
      type: 'invalid_arguments',
      message: 'echo: missing required argument "text"',
    });
    expect(hits).toBe(before); // validation happens before the tool runs
    const garbage = await reg.call({ name: 'echo', arguments: '{"text": ' });
    expect(garbage.error?.type).toBe('invalid_arguments');
    expect(ToolResultSchema.parse(await reg.call(null as never))).toMatchObject({ ok: false });
    await reg.close();
  });

  it('runs a call and returns the output', async () => {
    const reg = await buildToolRegistry({ tools: [echoTool({ result_field: 'result' })] });
    expect(await reg.call({ name: 'echo', arguments: { text: 'hi' } })).toEqual({
      ok: true,
      output: 'echo {"text":"hi"}',
      error: null,
      truncated: false,
    });
    await reg.close();
  });

  it('times out a slow tool and reports it', async () => {
    const reg = await buildToolRegistry({ tools: [echoTool({ timeout: 0.2 }, '/slow')] });
    const t0 = Date.now();
    const r = await reg.call({ name: 'echo', arguments: { text: 'x' } });
    expect(r.error).toEqual({ type: 'timeout', message: 'the tool did not finish within 0.2s' });
    expect(Date.now() - t0).toBeLessThan(1500);
    await reg.close();
  });

  it('retries transient HTTP failures with backoff, and not permanent ones', async () => {
    const reg = await buildToolRegistry({ tools: [echoTool({ max_retries: 2 })] });
    failFirst = 2;
    const before = hits;
    expect((await reg.call({ name: 'echo', arguments: { text: 'x' } })).ok).toBe(true);
    expect(hits - before).toBe(3);
    failFirst = 5;
    const gaveUp = await reg.call({ name: 'echo', arguments: { text: 'x' } });
    expect(gaveUp.error?.type).toBe('http_error');
    expect(gaveUp.error?.message).toMatch(/HTTP 503/);
    failFirst = 0;
    const reg400 = await buildToolRegistry({ tools: [echoTool({ max_retries: 2 }, '/bad')] });
    const h = hits;
    const r = await reg400.call({ name: 'echo', arguments: { text: 'x' } });
    expect(r.error?.message).toMatch(/HTTP 400: no such thing/);
    expect(hits - h).toBe(1);
    await reg.close();
    await reg400.close();
  });

  it('callMany keeps call order and holds each tool to num_workers', async () => {
    const reg = await buildToolRegistry({
      tools: [echoTool({ num_workers: 2, result_field: 'result' }, '/count')],
    });
    peak = 0;
    const calls = Array.from({ length: 6 }, (_, i) => ({ name: 'echo', arguments: { text: String(i) } }));
    const results = await reg.callMany(calls);
    expect(results.map((r) => r.output)).toEqual(calls.map((c) => `echo {"text":"${c.arguments.text}"}`));
    expect(peak).toBe(2);
    await reg.close();
  });

  it('holds a tool to calls_per_second', async () => {
    const reg = await buildToolRegistry({ tools: [echoTool({ calls_per_second: 10, num_workers: 10 })] });
    const t0 = Date.now();
    await reg.callMany(Array.from({ length: 13 }, () => ({ name: 'echo', arguments: { text: 'x' } })));
    // 10 calls/s with a burst of 10: calls 11..13 wait 100, 200, 300 ms for their tokens.
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
    await reg.close();
  });

  it("rate_limit caps calls in flight, as verl's semaphore does; enable_global_rate_limit shares the cap", async () => {
    const calls = Array.from({ length: 6 }, (_, i) => ({ name: 'echo', arguments: { text: String(i) } }));
    const capped = (global: boolean) =>
      buildToolRegistry({
        tools: [echoTool({ rate_limit: 2, num_workers: 8, enable_global_rate_limit: global }, '/count')],
      });
    // One registry: 6 calls, 8 workers, but at most 2 at once.
    peak = 0;
    const one = await capped(false);
    expect((await one.callMany(calls)).every((r) => r.ok)).toBe(true);
    expect(peak).toBe(2);
    // Two registries of their own: 2 each at once.
    peak = 0;
    const [a, b] = [await capped(false), await capped(false)];
    await Promise.all([a.callMany(calls), b.callMany(calls)]);
    expect(peak).toBe(4);
    // Sharing the cap: 2 at once over both.
    peak = 0;
    const [c, d] = [await capped(true), await capped(true)];
    await Promise.all([c.callMany(calls), d.callMany(calls)]);
    expect(peak).toBe(2);
    await Promise.all([one, a, b, c, d].map((r) => r.close()));
  });

  it('enable_global_rate_limit shares one calls_per_second bucket between registries; without it each has its own', async () => {
    // calls_per_second 2, burst 2, timeout 0.2 s: a third call within the second would wait 500 ms for a token,
    // past its deadline, so it fails as rate_limited instead of waiting.
    const limited = (global: boolean) =>
      buildToolRegistry({
        tools: [
          echoTool(
            { calls_per_second: 2, timeout: 0.2, enable_global_rate_limit: global, num_workers: 4 },
            '/limited',
          ),
        ],
      });
    const call = { name: 'echo', arguments: { text: 'x' } };
    const types = (rs: { error: { type: string } | null }[]) => rs.map((r) => r.error?.type ?? 'ok');

    const [a, b] = [await limited(true), await limited(true)];
    expect(types(await a.callMany([call, call]))).toEqual(['ok', 'ok']); // the shared burst of 2
    expect(types(await b.callMany([call]))).toEqual(['rate_limited']); // b draws from a's empty bucket

    const [c, d] = [await limited(false), await limited(false)];
    expect(types(await c.callMany([call, call]))).toEqual(['ok', 'ok']);
    expect(types(await d.callMany([call, call]))).toEqual(['ok', 'ok']); // d has a full bucket of its own
    expect(types(await d.callMany([call]))).toEqual(['rate_limited']);
    await Promise.all([a, b, c, d].map((r) => r.close()));
  });

  it('refuses enable_global_rate_limit without a limit to share', async () => {
    await expect(
      buildToolRegistry({ tools: [echoTool({ enable_global_rate_limit: true })] }),
    ).rejects.toThrow(
      /tool http: bad config: enable_global_rate_limit shares the rate limit, but neither rate_limit \(calls at once\) nor calls_per_second/,
    );
  });

  it('truncates outputs to max_tool_response_length on the configured side', async () => {
    const reg = await buildToolRegistry(
      { tools: [{ kind: 'search', config: { topk: 3 } }] },
      { truncate: { maxLength: 80, side: 'left' } },
    );
    const r = await reg.call({ name: 'search', arguments: { query_list: ['Eiffel Tower Paris'] } });
    expect(r.ok).toBe(true);
    expect(r.truncated).toBe(true);
    // verl's `left`: the first 80 characters, then its marker
    expect(r.output.length).toBe(80 + '...(truncated)'.length);
    expect(r.output).toMatch(/^Doc 1\(Title: Paris\)/);
    expect(r.output.endsWith('...(truncated)')).toBe(true);
    await reg.close();
  });

  it('http: reads allow-listed header secrets from the environment it is given, and fails the build when one is missing', async () => {
    const reg = await buildToolRegistry(
      { tools: [echoTool({ headers_from_env: { authorization: 'MY_TOKEN' } }, '/auth')] },
      { env: { MY_TOKEN: 'Bearer t0k', TOOLRL_TOOL_SECRETS: 'MY_TOKEN' } },
    );
    expect((await reg.call({ name: 'echo', arguments: { text: 'x' } })).output).toBe('auth=Bearer t0k');
    await expect(
      buildToolRegistry(
        { tools: [echoTool({ headers_from_env: { authorization: 'MY_TOKEN' } })] },
        { env: { TOOLRL_TOOL_SECRETS: 'MY_TOKEN' } },
      ),
    ).rejects.toThrow(/variable MY_TOKEN is not set/);
  });

  it('renders a failure with its error for the model', () => {
    expect(
      renderToolResult({
        ok: false,
        output: 'Traceback ...',
        error: { type: 'execution_error', message: 'the program exited with status 1' },
        truncated: false,
      }),
    ).toBe('Traceback ...\nError (execution_error): the program exited with status 1');
    expect(renderToolResult({ ok: true, output: '391', error: null, truncated: false })).toBe('391');
  });
});
