// model.chat_template replaces the model's template; a run whose template drops tool schemas or tool results is
// refused before any rollout, naming the model and the fix.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { loadRunConfig } from '#shared/config/resolve';
import { putJson } from '#shared/pipeline/blob-json';
import { RunResources } from '#shared/pipeline/run-resources';
import { chatTemplateProblems, resolveChatTemplate } from '#shared/policy/chat-templates';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { RunStatus } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';

/** A Zephyr-style template as TinyLlama-1.1B-Chat ships (written here): system, user and assistant turns only. */
const ZEPHYR = `{% for message in messages %}{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + eos_token }}{% elif message['role'] == 'system' %}{{ '<|system|>\\n' + message['content'] + eos_token }}{% elif message['role'] == 'assistant' %}{{ '<|assistant|>\\n' + message['content'] + eos_token }}{% endif %}{% if loop.last and add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}{% endfor %}`;

const roots: string[] = [];
const temp = () => {
  const d = mkdtempSync(join(tmpdir(), 'toolrl-tpl-'));
  roots.push(d);
  return d;
};
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

let bundleDir: string;
beforeAll(async () => {
  bundleDir = (await tinyBundle()).bundleDir;
});

describe('model.chat_template', () => {
  it('is a built-in name, a .jinja file next to the config, or the text itself; resolved to the text', () => {
    const chatml = resolveChatTemplate('chatml');
    expect(chatml).toContain('<tool_response>');
    // the tiny model's own template is the built-in chatml (two copies: the learner's and the rollouts')
    expect(chatml).toBe(
      readFileSync(
        new URL('../../../gpu-worker/toolrl_learner/model/chat_template.jinja', import.meta.url),
        'utf8',
      ),
    );
    const dir = temp();
    writeFileSync(join(dir, 'zephyr.jinja'), ZEPHYR);
    expect(resolveChatTemplate('zephyr.jinja', dir)).toBe(ZEPHYR);
    expect(resolveChatTemplate(ZEPHYR)).toBe(ZEPHYR);
    expect(() => resolveChatTemplate('zephyr.jinja')).toThrow(
      /names a file, which only toolrl train and toolrl submit can read/,
    );
    expect(() => resolveChatTemplate('llama9')).toThrow(/neither a built-in template \(chatml, smollm2\)/);
    const { config, effective } = loadRunConfig(
      'model: {path: tiny, chat_template: zephyr.jinja}\ndata: {train: t.parquet}\n',
      'run.yaml',
      [],
      dir,
    );
    expect(config.model.chat_template).toBe(ZEPHYR);
    expect((effective.model as { chat_template: string }).chat_template).toBe(ZEPHYR); // what is uploaded
  });

  it('renders in place of the bundle template', async () => {
    const tok = await ChatTokenizer.load(bundleDir, { chatTemplate: ZEPHYR });
    expect(tok.render([{ role: 'user', content: 'hi' }], [], { addGenerationPrompt: true })).toMatch(
      /^<\|user\|>\nhi/,
    );
  });

  it('a template that drops tool schemas and results is found out; chatml is not', async () => {
    expect(chatTemplateProblems(await ChatTokenizer.load(bundleDir, { chatTemplate: ZEPHYR }))).toEqual([
      'the tool schemas',
      'the tool results',
    ]);
    expect(chatTemplateProblems(await ChatTokenizer.load(bundleDir))).toEqual([]);
    const raising = {
      render: () => {
        throw new Error('Conversation roles must alternate user/assistant');
      },
    };
    expect(chatTemplateProblems(raising)).toEqual([
      'a conversation with tools (it raises: Conversation roles must alternate user/assistant)',
    ]);
  });
});

describe('a run whose template drops tool use', () => {
  async function runWith(chatTemplate?: string) {
    const root = temp();
    const blobs = new FolderBlobStore(root);
    const { config } = loadRunConfig(
      `model: {path: TinyLlama/TinyLlama-1.1B-Chat-v1.0}\ndata: {train: t.parquet}\n`,
      'run.yaml',
      chatTemplate ? [`model.chat_template=${JSON.stringify(chatTemplate)}`] : [],
    );
    const now = new Date().toISOString();
    const run: RunStatus = {
      schemaVersion: 1,
      runId: 'r',
      status: 'running',
      reason: null,
      createdAt: now,
      updatedAt: now,
      config,
      input: { config: keys.config('r'), train: [], val: [] },
      totals: { groupsPlanned: 1, trainPrompts: 1, valPrompts: 0, epochs: 1 },
      learner: { submittedAt: null, jobId: null },
      completedAt: null,
    };
    await putJson(blobs, keys.runJson('r'), run);
    const resources = new RunResources(blobs, { scratchDir: temp() });
    return { blobs, resources };
  }
  const publishV0 = (blobs: FolderBlobStore, template?: string) => {
    const v0 = blobs.localPath(keys.policyVersion('r', 0));
    mkdirSync(v0, { recursive: true });
    for (const f of readdirSync(bundleDir)) copyFileSync(join(bundleDir, f), join(v0, f));
    if (template !== undefined) {
      // A bundle exported from a model whose own template is Zephyr's (TinyLlama-1.1B-Chat).
      const cfgPath = join(v0, 'tokenizer_config.json');
      const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'));
      writeFileSync(cfgPath, JSON.stringify({ ...cfg, chat_template: template }));
      rmSync(join(v0, 'chat_template.jinja'), { force: true });
    }
  };

  it('is refused once its first policy is published, naming the model and the fix', async () => {
    const { blobs, resources } = await runWith();
    expect(await resources.chatTemplateRefusal('r')).toBeUndefined(); // no v0 yet: nothing to check
    publishV0(blobs, ZEPHYR);
    expect(await resources.chatTemplateRefusal('r')).toBe(
      'the chat template of TinyLlama/TinyLlama-1.1B-Chat-v1.0 drops the tool schemas and the tool results: the model would never see its tools or what they return. Set model.chat_template to a template that renders tools (a built-in: `chatml`, `smollm2`; or a .jinja file), e.g. `npx toolrl train CONFIG model.chat_template=chatml`',
    );
  });

  it('runs with model.chat_template: chatml over the same bundle', async () => {
    const { blobs, resources } = await runWith('chatml');
    publishV0(blobs, ZEPHYR);
    expect(await resources.chatTemplateRefusal('r')).toBeNull();
  });
});

describe('the built-in smollm2 template', () => {
  // SmolLM2-135M-Instruct's own template, verbatim from its GGUF (tokenizer.chat_template): no tools.
  const own = new Template(
    readFileSync(
      new URL('../../fixtures/chat-templates/smollm2-135m-instruct.jinja', import.meta.url),
      'utf8',
    ),
  );
  const ours = new Template(resolveChatTemplate('smollm2'));
  const render = (t: Template, messages: ChatMessage[], tools: ToolSchema[], gen: boolean) =>
    t.render({ messages, tools: tools.length ? tools : undefined, add_generation_prompt: gen });
  const calculator: ToolSchema = {
    type: 'function',
    function: {
      name: 'calculator',
      description: 'Evaluate an arithmetic expression.',
      parameters: {
        type: 'object',
        properties: { expression: { type: 'string' } },
        required: ['expression'],
      },
    },
  };

  it('renders a conversation without tools as SmolLM2-Instruct renders it', () => {
    const conversations: ChatMessage[][] = [
      [{ role: 'user', content: 'What is 4512 minus 1208?' }],
      [
        { role: 'system', content: 'You answer in one word.' },
        { role: 'user', content: 'Capital of France?' },
        { role: 'assistant', content: 'Paris' },
        { role: 'user', content: 'And of Italy?' },
      ],
    ];
    for (const messages of conversations)
      for (const gen of [false, true])
        expect(render(ours, messages, [], gen)).toBe(render(own, messages, [], gen));
  });

  it("renders tools, calls and results as Qwen2.5 writes them, each turn's rendering a prefix of the next", () => {
    const messages: ChatMessage[] = [
      { role: 'user', content: 'A shop had 4512 pens and sold 1208. How many are left?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { type: 'function', function: { name: 'calculator', arguments: { expression: '4512 - 1208' } } },
        ],
      },
      { role: 'tool', name: 'calculator', content: '3304' },
      { role: 'assistant', content: '\\boxed{3304}' },
    ];
    const full = render(ours, messages, [calculator], false);
    expect(full).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face\n\n# Tools\n\n' +
        'You may call one or more functions to assist with the user query.\n\nYou are provided with function ' +
        'signatures within <tools></tools> XML tags:\n<tools>\n{"type": "function", "function": {"name": ' +
        '"calculator", "description": "Evaluate an arithmetic expression.", "parameters": {"type": "object", ' +
        '"properties": {"expression": {"type": "string"}}, "required": ["expression"]}}}\n</tools>\n\n' +
        'For each function call, return a json object with function name and arguments within ' +
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}' +
        '\n</tool_call><|im_end|>\n<|im_start|>user\nA shop had 4512 pens and sold 1208. How many are left?' +
        '<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{"name": "calculator", "arguments": {"expression": ' +
        '"4512 - 1208"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n3304\n</tool_response>' +
        '<|im_end|>\n<|im_start|>assistant\n\\boxed{3304}<|im_end|>\n',
    );
    for (let k = 1; k < messages.length; k++) {
      // The generation prompt comes before an assistant turn; a tool result follows the assistant's turn directly.
      const before = render(ours, messages.slice(0, k), [calculator], messages[k]!.role === 'assistant');
      expect(render(ours, messages.slice(0, k + 1), [calculator], false).startsWith(before)).toBe(true);
    }
  });
});
