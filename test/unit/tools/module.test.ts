// TypeScript tool modules (`kind: module`): loaded like reward modules, their tools run through the registry's
// validation, limits and truncation like the built-ins.
import { dirname } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';

const baseDir = dirname(new URL('../../fixtures/tools/word-tools.ts', import.meta.url).pathname);
let registry: ToolRegistry | undefined;
afterEach(async () => {
  await registry?.close();
  registry = undefined;
});

describe('a TypeScript tool module', () => {
  it('builds its tools from the config and runs them, with step reward and metrics', async () => {
    registry = await buildToolRegistry(
      { tools: [{ kind: 'module', module: './word-tools.ts', config: { greeting: 'hi: ', timeout: 0.3 } }] },
      { baseDir },
    );
    expect(registry.names()).toEqual(['word_count', 'shout', 'wait']);
    expect(await registry.call({ name: 'word_count', arguments: { text: 'a b  c' } })).toEqual({
      ok: true,
      output: 'hi: 3 words',
      error: null,
      truncated: false,
      reward: 0.1,
      metrics: { words: 3 },
    });
    expect(await registry.call({ name: 'shout', arguments: { text: 'hey' } })).toMatchObject({
      output: 'HEY',
    });
    // A throw is an execution error; bad arguments are refused before the tool runs; the timeout aborts it.
    expect((await registry.call({ name: 'shout', arguments: { text: '' } })).error).toEqual({
      type: 'execution_error',
      message: 'nothing to shout',
    });
    expect((await registry.call({ name: 'word_count', arguments: { text: 1 } })).error?.type).toBe(
      'invalid_arguments',
    );
    expect((await registry.call({ name: 'wait', arguments: {} })).error?.type).toBe('timeout');
  });

  it('names the module and the problem when it cannot load', async () => {
    await expect(
      buildToolRegistry({ tools: [{ kind: 'module', module: './bad-tool.ts', config: {} }] }, { baseDir }),
    ).rejects.toThrow(
      /tool module \.\/bad-tool\.ts: `schema` is not an OpenAI function schema: function\.name/,
    );
    await expect(
      buildToolRegistry({ tools: [{ kind: 'module', module: './nope.ts', config: {} }] }, { baseDir }),
    ).rejects.toThrow(/tool module \.\/nope\.ts: cannot import/);
    await expect(buildToolRegistry({ tools: [{ kind: 'module' }] } as never, { baseDir })).rejects.toThrow(
      /`kind: module` needs `module: \.\/my-tool\.ts`/,
    );
  });
});
