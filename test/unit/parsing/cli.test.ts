// `toolrl parse` as a user runs it: the real command in a child process, the model's text on stdin.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HANG_MS } from '../../helpers/hang.ts';

const bin = new URL('../../../bin/toolrl.mjs', import.meta.url).pathname;
const toolrl = (args: string[], input?: string) => {
  const r = spawnSync(process.execPath, [bin, ...args], { input, encoding: 'utf8', timeout: HANG_MS });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('toolrl parse', () => {
  it('prints calls, errors and content as JSON', () => {
    const text =
      'Let me check.\n<tool_call>{"name": "calculator", "arguments": "{\\"expression\\": \\"2+2\\"}"}</tool_call><tool_call>{"arguments": {}}</tool_call>';
    const r = toolrl(['parse', '--json'], text);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      calls: [{ name: 'calculator', arguments: { expression: '2+2' } }],
      errors: [
        {
          message: 'tool call has no "name"',
          offset: text.indexOf('<tool_call>{"arg'),
          snippet: '<tool_call>{"arguments": {}}</tool_call>',
        },
      ],
      content: 'Let me check.',
    });
  });

  it('exits 2 for an unknown format', () => {
    expect(toolrl(['parse', '--format', 'mistral', '--json'], 'x')).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/unknown tool_parser_format "mistral"; known: .*hermes/),
    });
  });
});
