// ToolBench tools against `toolrl toolbench serve --cache DIR` (a real server over a hand-made
// StableToolBench cache), per-row tools, Finish, and the name/literal rules the cache depends on.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePythonLiteral } from '#shared/parsing/python-literal';
import { canonicalJson } from '#shared/tools/canonical-json';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { cachePath, functionName, splitFunctionName, standardize } from '#shared/tools/toolbench/names';
import { pythonRepr } from '#shared/tools/toolbench/python-repr';
import { type CliServer, startCliServer } from './cli-server.ts';

const CACHE = fileURLToPath(new URL('../../fixtures/tools/toolbench-cache', import.meta.url));

describe('ToolBench names and Python literals', () => {
  it('standardizes names as ToolBench does', () => {
    expect(standardize('Current Weather (v2)!')).toBe('current_weather_v2');
    expect(standardize('360 Image')).toBe('get_360_image');
    expect(functionName('WeatherAPI', 'Current Weather')).toBe('current_weather_for_weatherapi');
    expect(splitFunctionName('current_weather_for_weatherapi')).toEqual({
      toolName: 'weatherapi',
      apiName: 'current_weather',
    });
    expect(cachePath('News, Media', 'weatherapi', 'current_weather_for_weatherapi')).toEqual([
      'News_Media',
      'weatherapi_for_News_Media',
      'current_weather.json',
    ]);
  });

  it('writes dict reprs like Python and reads them back', () => {
    // Python: str({'city': "Xi'an", 'n': 2, 'ok': True, 'x': None, 'f': 1.5, 'l': [1, 'a\nb']})
    const value = { city: "Xi'an", n: 2, ok: true, x: null, f: 1.5, l: [1, 'a\nb'] };
    const repr = `{'city': "Xi'an", 'n': 2, 'ok': True, 'x': None, 'f': 1.5, 'l': [1, 'a\\nb']}`;
    expect(pythonRepr(value)).toBe(repr);
    expect(parsePythonLiteral(repr)).toEqual(value);
    expect(pythonRepr(1e16)).toBe('1e+16');
    expect(pythonRepr(0.00001)).toBe('1e-05');
    expect(canonicalJson({ b: 1, a: [2] })).toBe(canonicalJson({ a: [2], b: 1 }));
    expect(() => parsePythonLiteral('{1: __import__("os")}')).toThrow(/not a Python literal/);
  });
});

describe('toolbench tools against the cached server', () => {
  let server: CliServer;
  let reg: ToolRegistry;
  beforeAll(async () => {
    server = await startCliServer(['toolbench', 'serve', '--cache', CACHE]);
    reg = await buildToolRegistry({
      tools: [
        {
          kind: 'toolbench',
          config: {
            service_url: server.url,
            apis: [
              {
                category: 'Weather',
                tool_name: 'WeatherAPI',
                api_name: 'Current Weather',
                description: 'Current weather for a city',
                parameters: {
                  type: 'object',
                  properties: { city: { type: 'string' }, days: { type: 'NUMBER' } },
                  required: ['city'],
                },
              },
            ],
          },
        },
      ],
    });
  });
  afterAll(async () => {
    await server.stop();
    await reg.close();
  });

  it('exposes the configured APIs and Finish', () => {
    expect(reg.names()).toEqual(['current_weather_for_weatherapi', 'Finish']);
  });

  it("answers from the cache with ToolBench's observation", async () => {
    const r = await reg.call({ name: 'current_weather_for_weatherapi', arguments: { city: 'Paris' } });
    expect(r).toEqual({
      ok: true,
      output: JSON.stringify({ error: '', response: "{'temp_c': 14.0, 'condition': 'Partly cloudy'}" }),
      error: null,
      truncated: false,
    });
    const quoted = await reg.call({
      name: 'current_weather_for_weatherapi',
      arguments: '{"city": "Xi\'an", "days": 2}',
    });
    expect(quoted.output).toContain('forecast');
  });

  it('matches keys whatever the key order or number form (literal comparison)', async () => {
    const r = await reg.call({
      name: 'current_weather_for_weatherapi',
      arguments: { ratio: 1.5, precise: true, city: 'Oslo' },
    });
    expect(JSON.parse(r.output).response).toBe('cold');
  });

  it("returns StableToolBench's {error, response} shape for a miss, as a failed call", async () => {
    const r = await reg.call({ name: 'current_weather_for_weatherapi', arguments: { city: 'Atlantis' } });
    expect(r.ok).toBe(false);
    expect(r.error?.type).toBe('not_cached');
    expect(r.error?.message).toMatch(
      /^not cached: no response is cached for .*Weather\/weatherapi_for_Weather\/current_weather/,
    );
    expect(JSON.parse(r.output)).toMatchObject({ response: '' });
  });

  it('validates arguments against the (ToolBench-typed) schema before calling', async () => {
    const r = await reg.call({
      name: 'current_weather_for_weatherapi',
      arguments: { city: 'Paris', days: 'two' },
    });
    expect(r.error).toEqual({
      type: 'invalid_arguments',
      message: 'current_weather_for_weatherapi: argument days must be number',
    });
  });

  it("binds the tools a dataset row brings, with the row's category", async () => {
    const row = reg.forRow({
      category: 'Data',
      tools: [
        {
          type: 'function',
          function: {
            name: 'random_joke_for_jokes_api',
            description: 'A joke',
            parameters: { type: 'object', properties: {} },
          },
        },
      ],
    });
    expect(row.names()).toEqual(['current_weather_for_weatherapi', 'Finish', 'random_joke_for_jokes_api']);
    expect(
      JSON.parse((await row.call({ name: 'random_joke_for_jokes_api', arguments: {} })).output).response,
    ).toMatch(/chicken/);
    expect(reg.names()).not.toContain('random_joke_for_jokes_api'); // the base registry is unchanged
  });

  it('implements Finish', async () => {
    expect(
      (await reg.call({ name: 'Finish', arguments: { return_type: 'give_answer', final_answer: '14 C' } }))
        .output,
    ).toBe('{"response":"successfully giving the final answer."}');
    expect(
      (await reg.call({ name: 'Finish', arguments: { return_type: 'give_up_and_restart' } })).output,
    ).toBe('{"response":"chose to give up and restart"}');
    expect((await reg.call({ name: 'Finish', arguments: { return_type: 'give_answer' } })).error?.type).toBe(
      'invalid_arguments',
    );
    expect((await reg.call({ name: 'Finish', arguments: { return_type: 'quit' } })).error?.type).toBe(
      'invalid_arguments',
    );
  });

  it('answers the raw /virtual API, including its parse error', async () => {
    const post = (body: unknown) =>
      fetch(server.url, { method: 'POST', body: JSON.stringify(body) }).then((r) => r.json());
    expect(
      await post({
        category: 'Weather',
        tool_name: 'WeatherAPI',
        api_name: 'current_weather',
        tool_input: { city: 'Paris' },
        strip: '',
        toolbench_key: '',
      }),
    ).toMatchObject({ error: '' });
    expect(
      await post({
        category: 'Weather',
        tool_name: 'WeatherAPI',
        api_name: 'current_weather',
        tool_input: '{oops',
        strip: '',
        toolbench_key: '',
      }),
    ).toEqual({ error: 'Tool input parse error...\n', response: '' });
    expect(
      await post({
        category: '../..',
        tool_name: 'x',
        api_name: 'y',
        tool_input: '{}',
        strip: '',
        toolbench_key: '',
      }),
    ).toMatchObject({ response: '' });
  });
});

describe('row tools without a toolbench service', () => {
  it('are listed but fail with a clear error', async () => {
    const reg = await buildToolRegistry({ tools: [{ kind: 'get_current_time', config: {} }] });
    const row = reg.forRow({
      tools: [{ type: 'function', function: { name: 'x_for_y', description: '', parameters: {} } }],
    });
    expect((await row.call({ name: 'x_for_y', arguments: {} })).error?.message).toMatch(
      /no toolbench service is configured/,
    );
  });
});
