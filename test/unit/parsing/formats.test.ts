// The formats beyond Hermes (qwen3_coder, code_block) and Hermes' longer-span retry, on replies written by hand as
// the models write them, well-formed and malformed.
import { describe, expect, it } from 'vitest';
import {
  codeBlockParser,
  getParser,
  parserFormats,
  parseToolCalls,
  qwen3CoderParser,
} from '#shared/parsing/index';
import type { ToolSchema } from '#shared/schemas/chat';
import { expectLinear } from '../../helpers/linear.ts';

const tools: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'weather',
      parameters: {
        type: 'object',
        properties: {
          city: { type: 'string' },
          days: { type: 'integer' },
          metric: { type: 'boolean' },
          threshold: { type: 'number' },
          hours: { type: 'array', items: { type: 'integer' } },
          options: { type: 'object' },
          note: { type: ['string', 'null'] },
        },
        required: ['city'],
      },
    },
  },
];

describe('hermes: a </tool_call> inside a JSON string', () => {
  it('tries the longer span when the first does not parse', () => {
    const text =
      'Look: <tool_call>{"name": "code_interpreter", "arguments": {"code": "print(\'</tool_call>\')"}}</tool_call> done';
    const r = parseToolCalls(text);
    expect(r.errors).toEqual([]);
    expect(r.calls).toEqual([{ name: 'code_interpreter', arguments: { code: "print('</tool_call>')" } }]);
    expect(r.content).toBe('Look:  done');
  });

  it('keeps the first error when no longer span parses, and goes on after the first closing tag', () => {
    const text = '<tool_call>{"name": "a", </tool_call> text </tool_call>';
    const r = parseToolCalls(text);
    expect(r.calls).toEqual([]);
    expect(r.errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^invalid JSON in <tool_call>/),
      '</tool_call> without a matching <tool_call>',
    ]);
    expect(r.errors[0]?.offset).toBe(0);
  });

  it('does not reach past the next opening tag', () => {
    const text = '<tool_call>{"name": "a"</tool_call><tool_call>{"name": "b", "arguments": {}}</tool_call>';
    const r = parseToolCalls(text);
    expect(r.calls).toEqual([{ name: 'b', arguments: {} }]);
    expect(r.errors).toHaveLength(1);
  });
});

describe('qwen3_coder parser', () => {
  const parse = (text: string) => qwen3CoderParser.parse(text, { tools });

  it('parses the template layout and converts each value by its schema type', () => {
    const text = [
      'I will check.',
      '<tool_call>',
      '<function=get_weather>',
      '<parameter=city>',
      'San Francisco',
      '</parameter>',
      '<parameter=days>',
      '3',
      '</parameter>',
      '<parameter=metric>',
      'False',
      '</parameter>',
      '<parameter=threshold>',
      '2.5e1',
      '</parameter>',
      '<parameter=hours>',
      '[6, 12]',
      '</parameter>',
      '<parameter=options>',
      '{"lang": "fr"}',
      '</parameter>',
      '<parameter=note>',
      'null',
      '</parameter>',
      '</function>',
      '</tool_call>',
    ].join('\n');
    const r = parse(text);
    expect(r.errors).toEqual([]);
    expect(r.content).toBe('I will check.');
    expect(r.calls).toEqual([
      {
        name: 'get_weather',
        arguments: {
          city: 'San Francisco',
          days: 3,
          metric: false,
          threshold: 25,
          hours: [6, 12],
          options: { lang: 'fr' },
          note: 'null', // a string-typed parameter keeps its text
        },
      },
    ]);
  });

  it('keeps values it cannot convert as text (the tool validation reports them), and never evaluates', () => {
    const text =
      '<tool_call><function=get_weather><parameter=city>\nParis\n</parameter><parameter=days>two</parameter>' +
      '<parameter=hours>__import__("os").system("id")</parameter><parameter=extra>7</parameter></function></tool_call>';
    const r = parse(text);
    expect(r.errors).toEqual([]);
    expect(r.calls[0]?.arguments).toEqual({
      city: 'Paris',
      days: 'two',
      hours: '__import__("os").system("id")',
      extra: '7', // not in the schema: text
    });
  });

  it('keeps every value as text for a tool that was not offered, and keeps inner newlines of a value', () => {
    const r = qwen3CoderParser.parse(
      '<tool_call>\n<function=run>\n<parameter=code>\nx = 1\n\nprint(x)\n</parameter>\n</function>\n</tool_call>',
    );
    expect(r.calls).toEqual([{ name: 'run', arguments: { code: 'x = 1\n\nprint(x)' } }]);
  });

  it('parses several calls, and a call with no parameters', () => {
    const r = parse(
      '<tool_call>\n<function=a>\n</function>\n</tool_call>\n<tool_call>\n<function=b>\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>',
    );
    expect(r.calls).toEqual([
      { name: 'a', arguments: {} },
      { name: 'b', arguments: { x: '1' } },
    ]);
  });

  it.each([
    ['<tool_call>{"name": "a"}</tool_call>', /must hold <function=NAME>/],
    ['<tool_call><function=>\n</function></tool_call>', /has no name/],
    ['<tool_call><function=a><parameter=x>1</function></tool_call>', /unclosed <parameter=/],
    ['<tool_call><function=a><parameter=x>1</parameter></tool_call>', /not closed by <\/function>/],
    ['<tool_call><function=a>stray<parameter=x>1</parameter></function></tool_call>', /text outside/],
    [
      '<tool_call><function=a><parameter=x>1</parameter><parameter=x>2</parameter></function></tool_call>',
      /given twice/,
    ],
    ['<tool_call><function=a><parameter=>1</parameter></function></tool_call>', /has no name/],
    ['<tool_call><function=a><parameter=x>1</parameter></function>', /unclosed <tool_call>/],
  ])('reports a malformed call as an error: %s', (text, message) => {
    const r = parse(text);
    expect(r.calls).toEqual([]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]?.message).toMatch(message);
  });

  it('takes a </tool_call> inside a value as text when the longer span is the whole call', () => {
    const r = parse(
      '<tool_call><function=get_weather><parameter=city>a</tool_call>b</parameter></function></tool_call>',
    );
    expect(r.errors).toEqual([]);
    expect(r.calls).toEqual([{ name: 'get_weather', arguments: { city: 'a</tool_call>b' } }]);
  });

  it('round-trips what render writes', () => {
    const calls = [
      { name: 'get_weather', arguments: { city: 'Oslo', days: 2, hours: [1, 2], metric: true } },
    ];
    expect(parse(qwen3CoderParser.render(calls)).calls).toEqual(calls);
  });
});

describe('code_block parser', () => {
  it('runs every ```python block of a ToolGRPO reply through the code tool; the text stays the content', () => {
    const text =
      "Let's solve this step by step:\n```python\nprint(4 * 5 / 4)\n```\nand\n```py\nimport math\nprint(math.pi)\n```\nSo \\boxed{5}.";
    const r = parseToolCalls(text, 'code_block');
    expect(r.errors).toEqual([]);
    expect(r.calls).toEqual([
      { name: 'code_interpreter', arguments: { code: 'print(4 * 5 / 4)' } },
      { name: 'code_interpreter', arguments: { code: 'import math\nprint(math.pi)' } },
    ]);
    expect(r.content).toBe(text);
  });

  it("reads ReTool's <code> wrapping and leaves other languages' and output blocks alone", () => {
    const text =
      '<code>\n```python\nx = 2**10\nprint(x)\n```\n</code>\n```output\n1024\n```\n```bash\nls\n```\n```json\n{}\n```';
    const r = parseToolCalls(text, 'code_block');
    expect(r.calls).toEqual([{ name: 'code_interpreter', arguments: { code: 'x = 2**10\nprint(x)' } }]);
    expect(r.errors).toEqual([]);
  });

  it('sends blocks to the configured tool, argument and languages', () => {
    const r = parseToolCalls('```sage\nfactor(12)\n```\n```python\nprint(1)\n```', 'code_block', {
      codeBlock: { tool: 'sage_runner', argument: 'source', languages: ['sage'] },
    });
    expect(r.calls).toEqual([{ name: 'sage_runner', arguments: { source: 'factor(12)' } }]);
  });

  it('reports an unclosed or an empty python block as a malformed call, never runs it', () => {
    const unclosed = parseToolCalls('Compute:\n```python\nprint(1)\n', 'code_block');
    expect(unclosed.calls).toEqual([]);
    expect(unclosed.errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/^unclosed ```python block/),
    ]);
    expect(unclosed.errors[0]?.offset).toBe(9);
    const empty = parseToolCalls('```python\n\n```\n```python\nprint(2)\n```', 'code_block');
    expect(empty.errors.map((e) => e.message)).toEqual(['empty ```python block: nothing to run']);
    expect(empty.calls).toHaveLength(1);
  });

  it('returns plain prose unchanged with no calls', () => {
    expect(parseToolCalls(' The answer is \\boxed{7}. ', 'code_block')).toEqual({
      calls: [],
      errors: [],
      content: 'The answer is \\boxed{7}.',
    });
  });

  it('is inline and round-trips what render writes', () => {
    expect(codeBlockParser.inline).toBe(true);
    const calls = [{ name: 'code_interpreter', arguments: { code: 'print(3)' } }];
    expect(parseToolCalls(codeBlockParser.render(calls), 'code_block').calls).toEqual(calls);
  });

  it('parses megabytes of fences, in linear time', () => {
    const r = parseToolCalls('```'.repeat(3 << 20), 'code_block');
    expect(r.calls).toEqual([]);
    const many = '```python\nprint(1)\n```\n'.repeat(100_000);
    expect(parseToolCalls(many, 'code_block').calls).toHaveLength(100_000);
    const fences = '```'.repeat(1 << 18);
    expectLinear(() => parseToolCalls(fences, 'code_block'), fences.length);
    const blocks = '```python\nprint(1)\n```\n'.repeat(20_000);
    expectLinear(() => parseToolCalls(blocks, 'code_block'), blocks.length);
  });
});

describe('the registry', () => {
  it('knows the three formats', () => {
    expect(parserFormats()).toEqual(expect.arrayContaining(['code_block', 'hermes', 'qwen3_coder']));
    // The registry wraps each parser (the argument depth bound) but keeps its format and its calls.
    expect(getParser('qwen3_coder').format).toBe(qwen3CoderParser.format);
  });
});
