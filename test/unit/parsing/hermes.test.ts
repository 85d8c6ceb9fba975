import { describe, expect, it } from 'vitest';
import {
  getParser,
  hermesParser,
  parserFormats,
  parseToolCalls,
  registerParser,
} from '#shared/parsing/index';

const call = (name: string, args: unknown) =>
  `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

describe('hermes parser: well-formed calls', () => {
  it('parses one call and keeps the text around it as content', () => {
    const r = parseToolCalls(`Let me compute that.\n${call('calculator', { expression: '17*23' })}\nDone.`);
    expect(r.calls).toEqual([{ name: 'calculator', arguments: { expression: '17*23' } }]);
    expect(r.errors).toEqual([]);
    expect(r.content).toBe('Let me compute that.\n\nDone.');
  });

  it('parses several calls per turn in order', () => {
    const text = `${call('search', { query_list: ['a'] })}\n${call('calculator', { expression: '1+1' })}${call('get_current_time', {})}`;
    const r = parseToolCalls(text);
    expect(r.calls.map((c) => c.name)).toEqual(['search', 'calculator', 'get_current_time']);
    expect(r.content).toBe('');
  });

  it('accepts arguments as a JSON-encoded string', () => {
    const r = parseToolCalls(
      '<tool_call>{"name": "calculator", "arguments": "{\\"expression\\": \\"2^10\\"}"}</tool_call>',
    );
    expect(r.errors).toEqual([]);
    expect(r.calls).toEqual([{ name: 'calculator', arguments: { expression: '2^10' } }]);
  });

  it('treats missing, null or empty-string arguments as no arguments, and accepts `parameters`', () => {
    const r = parseToolCalls(
      '<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "b", "arguments": null}</tool_call>' +
        '<tool_call>{"name": "c", "arguments": ""}</tool_call><tool_call>{"name": "d", "parameters": {"x": 1}}</tool_call>',
    );
    expect(r.errors).toEqual([]);
    expect(r.calls).toEqual([
      { name: 'a', arguments: {} },
      { name: 'b', arguments: {} },
      { name: 'c', arguments: {} },
      { name: 'd', arguments: { x: 1 } },
    ]);
  });

  it('keeps braces, quotes and tag-like text inside JSON strings', () => {
    const code = 'def f():\n    return {"a": [1, {"b": "}"}]}\nprint("{" * 3, "<tool")';
    const r = parseToolCalls(call('code_interpreter', { code }));
    expect(r.errors).toEqual([]);
    expect(r.calls[0]?.arguments).toEqual({ code });
  });

  it('returns plain text unchanged (trimmed) with no calls', () => {
    expect(parseToolCalls('  The answer is \\boxed{391}.\n')).toEqual({
      calls: [],
      errors: [],
      content: 'The answer is \\boxed{391}.',
    });
    expect(parseToolCalls('')).toEqual({ calls: [], errors: [], content: '' });
  });

  it('round-trips what render writes', () => {
    const calls = [
      { name: 'search', arguments: { query_list: ['who wrote "Hamlet"?'] } },
      { name: 'calculator', arguments: { expression: '(1+2)*3' } },
    ];
    expect(parseToolCalls(hermesParser.render(calls)).calls).toEqual(calls);
  });
});

describe('hermes parser: malformed calls are errors, never exceptions', () => {
  it('reports a call without a name and still returns the good calls', () => {
    const r = parseToolCalls(
      `<tool_call>{"arguments": {"x": 1}}</tool_call>${call('calculator', { expression: '1' })}`,
    );
    expect(r.calls).toEqual([{ name: 'calculator', arguments: { expression: '1' } }]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]).toMatchObject({ message: 'tool call has no "name"', offset: 0 });
    expect(r.errors[0]?.snippet).toBe('<tool_call>{"arguments": {"x": 1}}</tool_call>');
  });

  it.each([
    ['bad JSON', '<tool_call>{"name": "a", "arguments": {x: 1}}</tool_call>', /invalid JSON in <tool_call>/],
    ['empty body', '<tool_call>  \n </tool_call>', /empty <tool_call>/],
    ['an array', '<tool_call>[{"name": "a"}]</tool_call>', /must hold one JSON object.*got an array/],
    ['a number name', '<tool_call>{"name": 7}</tool_call>', /"name" must be a string, got number/],
    ['empty name', '<tool_call>{"name": "", "arguments": {}}</tool_call>', /has no "name"/],
    [
      'array arguments',
      '<tool_call>{"name": "a", "arguments": [1]}</tool_call>',
      /"arguments" of a must be a JSON object, got an array/,
    ],
    [
      'string arguments not JSON',
      '<tool_call>{"name": "a", "arguments": "x=1"}</tool_call>',
      /"arguments" of a is a string but not valid JSON/,
    ],
    [
      'string arguments not an object',
      '<tool_call>{"name": "a", "arguments": "42"}</tool_call>',
      /must be a JSON object, got number/,
    ],
    ['two objects in one call', '<tool_call>{"name": "a"}{"name": "b"}</tool_call>', /invalid JSON/],
  ])('%s', (_label, text, message) => {
    const r = parseToolCalls(`before ${text} after`);
    expect(r.calls).toEqual([]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]?.message).toMatch(message);
    expect(r.errors[0]?.offset).toBe(7);
    // The malformed call is not content: the model's prose around it is.
    expect(r.content).toBe('before  after');
  });

  it('reports an unclosed call at the end and keeps earlier calls', () => {
    const cut = '<tool_call>{"name": "b", "arguments": {"x"';
    const text = `${call('a', {})} thinking ${cut}`;
    const r = parseToolCalls(text);
    expect(r.calls.map((c) => c.name)).toEqual(['a']);
    expect(r.errors).toEqual([
      {
        message: 'unclosed <tool_call>: no </tool_call> follows',
        offset: text.length - cut.length,
        snippet: cut,
      },
    ]);
    expect(r.content).toBe('thinking');
  });

  it('resumes at a new <tool_call> that starts before the previous one closed', () => {
    const r = parseToolCalls(`<tool_call>{"name": "a", "arguments": {}\n${call('b', { y: 2 })}`);
    expect(r.calls).toEqual([{ name: 'b', arguments: { y: 2 } }]);
    expect(r.errors[0]?.message).toMatch(/another <tool_call> starts before <\/tool_call>/);
  });

  it('reports a stray closing tag and keeps it in the content', () => {
    const r = parseToolCalls('answer</tool_call> 42');
    expect(r.calls).toEqual([]);
    expect(r.errors).toEqual([
      { message: '</tool_call> without a matching <tool_call>', offset: 6, snippet: '</tool_call>' },
    ]);
    expect(r.content).toBe('answer</tool_call> 42');
  });

  it('cuts the snippet of a huge malformed call', () => {
    const r = parseToolCalls(
      `<tool_call>{"name": "a", "arguments": {"x": "${'y'.repeat(10_000)}}</tool_call>`,
    );
    expect(r.errors[0]?.snippet.length).toBeLessThanOrEqual(201);
    expect(r.errors[0]?.message.length).toBeLessThan(400);
  });
});

describe('parser registry', () => {
  it('knows hermes and names the known formats for an unknown one', () => {
    expect(parserFormats()).toContain('hermes');
    expect(getParser('hermes').format).toBe('hermes');
    expect(getParser('hermes')).toBe(getParser('hermes'));
    expect(() => getParser('mistral')).toThrow(/unknown tool_parser_format "mistral"; known: .*hermes/);
  });
  it('refuses to replace a registered format', () => {
    expect(() => registerParser({ ...hermesParser })).toThrow(/already registered/);
  });
});
