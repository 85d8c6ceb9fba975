// `toolrl tools list|call`: the JSON contract and exit codes other checks rely on.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import { ToolSchemaSchema } from '#shared/schemas/chat';
import { ToolResultSchema } from '#shared/schemas/tool-result';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';
import { HANG_MS } from '../../helpers/hang.ts';
import { TOOLRL } from './cli-server.ts';

const toolrl = (...args: string[]) => {
  const r = spawnSync(process.execPath, [TOOLRL, ...args], { encoding: 'utf8', timeout: HANG_MS });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('toolrl tools', () => {
  it('list --json prints the default OpenAI schemas', () => {
    const r = toolrl('tools', 'list', '--json');
    expect(r.code).toBe(0);
    const schemas = JSON.parse(r.stdout) as unknown[];
    expect(schemas.map((s) => ToolSchemaSchema.parse(s).function.name)).toEqual([
      'calculator',
      'get_current_time',
      'weather_query',
      'search',
      'code_interpreter',
    ]);
  });

  it('call --json prints one ToolResult; tool failures exit 0', () => {
    const ok = toolrl('tools', 'call', 'calculator', '--args', '{"expression": "17 * 23"}', '--json');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ ok: true, output: '391', error: null, truncated: false });
    for (const args of [
      ['tools', 'call', 'nope', '--json'],
      ['tools', 'call', 'calculator', '--args', '{"expression": 5}', '--json'],
      ['tools', 'call', 'calculator', '--args', 'not json', '--json'],
    ]) {
      const r = toolrl(...args);
      expect(r.code).toBe(0);
      expect(ToolResultSchema.parse(JSON.parse(r.stdout)).ok).toBe(false);
    }
    const code = toolrl('tools', 'call', 'code_interpreter', '--args', '{"code": "print(2**10)"}', '--json');
    expect(JSON.parse(code.stdout)).toEqual({ ok: true, output: '1024\n', error: null, truncated: false });
  });

  it('a call past its timeout is ok: false with error type timeout and exit code 0', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-tools-'));
    const file = join(dir, 'tools.yaml');
    // The registry's timeout (1 s) fires long before the sandbox's own wall clock (30 s) would.
    writeFileSync(file, 'tools:\n  - kind: code_interpreter\n    config: {timeout: 1, run_timeout: 30}\n');
    const started = performance.now();
    const r = toolrl(
      'tools',
      'call',
      'code_interpreter',
      '--tools',
      file,
      '--args',
      '{"code": "import time\\ntime.sleep(25)\\nprint(\\"late\\")"}',
      '--json',
    );
    const seconds = (performance.now() - started) / 1000;
    expect(r.code).toBe(0);
    const result = ToolResultSchema.parse(JSON.parse(r.stdout));
    expect(result).toMatchObject({ ok: false, error: { type: 'timeout' } });
    expect(result.error?.message).toMatch(/did not finish within 1s/);
    expect(seconds).toBeLessThan(20); // the command did not wait for the sleeping program
  });

  it('truncates with --max-length and --truncate-side', () => {
    const r = toolrl(
      'tools',
      'call',
      'code_interpreter',
      '--args',
      '{"code": "print(\\"a\\" * 500)"}',
      '--max-length',
      '100',
      '--truncate-side',
      'left',
      '--json',
    );
    const result = JSON.parse(r.stdout);
    expect(result.truncated).toBe(true);
    // verl's `left` keeps the start: 100 characters, then the marker
    expect(result.output).toBe(`${'a'.repeat(100)}...(truncated)`);
  });

  it('counts --max-length in tokens with --tokenizer', async () => {
    const { bundleDir } = await tinyBundle();
    const r = toolrl(
      'tools',
      'call',
      'code_interpreter',
      '--args',
      JSON.stringify({ code: "print(' '.join(['the quick brown fox'] * 100))" }),
      '--max-length',
      '64',
      '--truncate-side',
      'left',
      '--tokenizer',
      bundleDir,
      '--json',
    );
    expect(r.code).toBe(0);
    const result = ToolResultSchema.parse(JSON.parse(r.stdout));
    expect(result.truncated).toBe(true);
    expect(result.output).toMatch(/^the quick brown fox .*\.\.\.\(truncated\)$/s);
    const head = result.output.slice(0, -'...(truncated)'.length);
    // Words are a token or two each in this tokenizer: 64 tokens hold more than 64 characters.
    expect((await ChatTokenizer.load(bundleDir)).encode(head).length).toBeLessThanOrEqual(64);
    expect(head.length).toBeGreaterThan(64);
  });

  it('reads a tool config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-tools-'));
    const file = join(dir, 'tools.yaml');
    writeFileSync(
      file,
      'tools:\n  - kind: calculator\n    tool_schema:\n      type: function\n      function:\n        name: calc\n        description: math\n        parameters: {type: object, properties: {expression: {type: string}}, required: [expression]}\n',
    );
    expect(JSON.parse(toolrl('tools', 'list', '--tools', file, '--json').stdout)).toEqual([
      {
        type: 'function',
        function: {
          name: 'calc',
          description: 'math',
          parameters: {
            type: 'object',
            properties: { expression: { type: 'string' } },
            required: ['expression'],
          },
        },
      },
    ]);
    expect(
      JSON.parse(
        toolrl('tools', 'call', 'calc', '--tools', file, '--args', '{"expression": "2+2"}', '--json').stdout,
      ).output,
    ).toBe('4');
  });

  it('exits 2 on misuse of the command', () => {
    expect(toolrl('tools', 'call', '--json').code).toBe(2); // no tool name
    expect(toolrl('tools', 'list', '--tools', '/nonexistent.yaml').code).toBe(2);
    const dir = mkdtempSync(join(tmpdir(), 'cli-tools-'));
    writeFileSync(join(dir, 'bad.yaml'), 'tools:\n  - kind: teleport\n');
    const bad = toolrl('tools', 'list', '--tools', join(dir, 'bad.yaml'));
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown tool kind "teleport"/);
    expect(toolrl('tools', 'call', 'calculator', '--max-length', 'x').code).toBe(2);
    expect(toolrl('tools', 'call', 'calculator', '--tokenizer', dir).code).toBe(2); // no --max-length
    const noTokenizer = toolrl('tools', 'call', 'calculator', '--max-length', '9', '--tokenizer', dir);
    expect(noTokenizer.code).toBe(2);
    expect(noTokenizer.stderr).toMatch(/has no tokenizer\.json/);
  });
});
