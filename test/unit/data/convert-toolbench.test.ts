// ToolLLaMA rows (`dataset convert --from toolbench` on `conversations` entries) get a category and API routes, so
// their calls reach a StableToolBench server: converted here from hand-made entries, then called through the
// `toolbench` tool kind against `toolrl toolbench serve` over a hand-made cache (a real server process).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { convertDataset } from '#shared/data/convert';
import { readDataset } from '#shared/data/dataset';
import { episodeRowTools } from '#shared/episode/user-turns';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { type CliServer, startCliServer } from '../tools/cli-server.ts';

const CACHE = fileURLToPath(new URL('../../fixtures/tools/toolbench-cache', import.meta.url));
const tmp = mkdtempSync(join(tmpdir(), 'toolrl-convert-toolbench-'));

/** A ToolLLaMA entry: ToolBench's system prompt with the API list as a Python literal, and the query. */
const entry = (query: string, apis: string[], extra: Record<string, unknown> = {}) => ({
  id: `Step 2: ${query}`,
  ...extra,
  conversations: [
    {
      from: 'system',
      value: `You are AutoGPT, you can use many tools(functions) to do the following task.\nSpecifically, you have access to the following APIs: [${[
        ...apis,
        'Finish',
      ]
        .map(
          (name) =>
            `{'name': '${name}', 'description': 'd', 'parameters': {'type': 'object', 'properties': {}}}`,
        )
        .join(', ')}]`,
    },
    { from: 'user', value: `\n${query}\nBegin!\n` },
    { from: 'assistant', value: `\nThought: go\nAction: ${apis[0]}\nAction Input: {}` },
  ],
});

let n = 0;
function convert(entries: unknown[], category?: string) {
  const input = join(tmp, `in-${n}.json`);
  const out = join(tmp, `out-${n++}.parquet`);
  writeFileSync(input, JSON.stringify(entries));
  const summary = convertDataset({ from: 'toolbench', input, out, ...(category ? { category } : {}) });
  return { summary, rows: () => readDataset(out) };
}

let server: CliServer;
let registry: ToolRegistry;
beforeAll(async () => {
  server = await startCliServer(['toolbench', 'serve', '--cache', CACHE]);
  // No `apis` and no `category` in the tool config: everything comes from the rows.
  registry = await buildToolRegistry({ tools: [{ kind: 'toolbench', config: { service_url: server.url } }] });
});
afterAll(async () => {
  await registry?.close();
  await server?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const callFor = (row: DatasetRow, name: string, args: Record<string, unknown>) =>
  registry.forRow(episodeRowTools(row)).call({ name, arguments: args });

describe('ToolLLaMA rows: category and routes', () => {
  it('routes from `<api>_for_<tool>` names; the category from the entry, else --category', async () => {
    const { summary, rows } = convert(
      [
        entry("What's the weather in Paris?", ['current_weather_for_weatherapi']),
        entry('Tell me a joke.', ['random_joke_for_jokes_api'], { category: 'Data' }),
      ],
      'Weather',
    );
    expect(summary.notes).toEqual([]);
    const [weather, joke] = await rows();
    expect(weather!.extra_info).toMatchObject({
      category: 'Weather', // --category: the entry names none
      apis: [
        {
          name: 'current_weather_for_weatherapi',
          category_name: 'Weather',
          tool_name: 'weatherapi',
          api_name: 'current_weather',
        },
      ], // Finish has no route
    });
    expect(joke!.extra_info).toMatchObject({
      category: 'Data', // the entry's own wins over --category
      apis: [
        {
          name: 'random_joke_for_jokes_api',
          category_name: 'Data',
          tool_name: 'jokes_api',
          api_name: 'random_joke',
        },
      ],
    });

    // The server finds Weather/weatherapi_for_Weather/current_weather.json and Data/jokes_api_for_Data/random_joke.json.
    expect(await callFor(weather!, 'current_weather_for_weatherapi', { city: 'Paris' })).toMatchObject({
      ok: true,
      output: JSON.stringify({ error: '', response: "{'temp_c': 14.0, 'condition': 'Partly cloudy'}" }),
    });
    expect((await callFor(joke!, 'random_joke_for_jokes_api', {})).output).toContain('chicken');
  });

  it('without a category: routes still, a note that says how to give one, and the server cannot find the API', async () => {
    const { summary, rows } = convert([
      entry("What's the weather in Paris?", ['current_weather_for_weatherapi']),
    ]);
    expect(summary.notes).toEqual([
      "1 row has no category (ToolLLaMA data names none): a StableToolBench server needs one to find an API; pass --category, or set the toolbench tool's `category` in the run's tools",
    ]);
    const [row] = await rows();
    expect(row!.extra_info.category).toBeUndefined();
    expect(row!.extra_info.apis).toEqual([
      { name: 'current_weather_for_weatherapi', tool_name: 'weatherapi', api_name: 'current_weather' },
    ]);
    const miss = await callFor(row!, 'current_weather_for_weatherapi', { city: 'Paris' });
    expect(miss).toMatchObject({ ok: false, error: { type: 'not_cached' } });
  });
});
