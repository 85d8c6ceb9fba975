// Episodes in the formats beyond Hermes: code blocks stay in the assistant's text and their outputs come back in
// the configured wrapper; qwen3_coder values are converted by the offered tools' schemas.
import { describe, expect, it } from 'vitest';
import { onAssistantTurn, onToolResults, startEpisode } from '#shared/episode/index';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { ToolResult } from '#shared/schemas/tool-result';

const prompt: ChatMessage[] = [{ role: 'user', content: 'What is 2**10?' }];
const ok = (output: string): ToolResult => ({ ok: true, output, error: null, truncated: false });

describe('a code_block episode', () => {
  it('runs the block, keeps it in the assistant text with no tool_calls, and wraps the output', () => {
    const s = startEpisode(
      {
        tool_parser_format: 'code_block',
        code_block: {
          tool: 'code_interpreter',
          argument: 'code',
          languages: ['python'],
          output_wrapper: '<interpreter>\n{output}\n</interpreter>',
        },
      },
      prompt,
    );
    const text = '<code>\n```python\nprint(2**10)\n```\n</code>';
    const t = onAssistantTurn(s, { text, stop: 'eos', generatedTokens: 12 });
    expect(t.decision).toMatchObject({
      kind: 'call_tools',
      calls: [{ name: 'code_interpreter', arguments: { code: 'print(2**10)' } }],
    });
    expect(t.state.messages.at(-1)).toEqual({ role: 'assistant', content: text });
    const r = onToolResults(t.state, [ok('1024\n')]);
    expect(r.toolMessages).toEqual([
      { role: 'tool', name: 'code_interpreter', content: '<interpreter>\n1024\n\n</interpreter>' },
    ]);
    expect(r.turn.toolCalls[0]?.result.output).toBe('1024\n');
  });

  it("defaults to ToolGRPO's ```output wrapper, errors included", () => {
    const s = startEpisode({ tool_parser_format: 'code_block' }, prompt);
    const t = onAssistantTurn(s, { text: '```python\n1/0\n```', stop: 'eos', generatedTokens: 5 });
    const failed: ToolResult = {
      ok: false,
      output: 'ZeroDivisionError: division by zero',
      error: { type: 'execution_error', message: 'the program exited with status 1' },
      truncated: false,
    };
    expect(onToolResults(t.state, [failed]).toolMessages[0]?.content).toBe(
      '```output\nZeroDivisionError: division by zero\nError (execution_error): the program exited with status 1\n```',
    );
  });

  it('ends on eos when the reply has no block, and reports an unclosed one to the model', () => {
    const s = startEpisode({ tool_parser_format: 'code_block' }, prompt);
    expect(onAssistantTurn(s, { text: '\\boxed{1024}', stop: 'eos', generatedTokens: 3 }).decision).toEqual({
      kind: 'finish',
      reason: 'eos',
    });
    const t = onAssistantTurn(s, { text: '```python\nprint(1)', stop: 'eos', generatedTokens: 3 });
    expect(t.decision).toMatchObject({ kind: 'call_tools', calls: [] });
    expect(onToolResults(t.state, []).toolMessages[0]?.content).toMatch(/unclosed ```python block/);
  });

  it('refuses a wrapper without {output}', () => {
    expect(() =>
      startEpisode(
        { tool_parser_format: 'code_block', code_block: { output_wrapper: '<x/>' } } as never,
        prompt,
      ),
    ).toThrow(/output_wrapper must contain \{output\}/);
  });
});

describe('a qwen3_coder episode', () => {
  it('converts values by the schemas of the tools offered', () => {
    const tools: ToolSchema[] = [
      {
        type: 'function',
        function: {
          name: 'calculator',
          description: 'c',
          parameters: {
            type: 'object',
            properties: { expression: { type: 'string' }, digits: { type: 'integer' } },
          },
        },
      },
    ];
    const s = startEpisode({ tool_parser_format: 'qwen3_coder' }, prompt);
    const text =
      '<tool_call>\n<function=calculator>\n<parameter=expression>\n2^10\n</parameter>\n<parameter=digits>\n4\n</parameter>\n</function>\n</tool_call>';
    const t = onAssistantTurn(s, { text, stop: 'tool_call', generatedTokens: 20 }, { tools });
    expect(t.decision).toMatchObject({
      calls: [{ name: 'calculator', arguments: { expression: '2^10', digits: 4 } }],
    });
    expect(t.state.messages.at(-1)?.tool_calls).toHaveLength(1);
  });
});
