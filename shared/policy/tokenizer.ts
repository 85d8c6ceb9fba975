// The bundle's tokenizer and chat template: @huggingface/tokenizers (tokenizer.json as the Rust `tokenizers` reads
// it) and @huggingface/jinja, the two libraries transformers.js itself uses, wired as its `apply_chat_template`
// wires them, so prompts render exactly as `tokenizer.apply_chat_template` renders them in Python.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';

export interface RenderOptions {
  addGenerationPrompt: boolean;
}

export interface TokenizerOptions {
  /** A Jinja chat template to use instead of the bundle's. */
  chatTemplate?: string;
  /** Extra template variables, e.g. `{enable_thinking: false}` for Qwen3. */
  templateKwargs?: Record<string, unknown>;
}

/** The tokenizer_config.json keys Hugging Face passes to every chat template (`{{ eos_token }}`, ...). */
const SPECIAL_TOKEN_KEYS = [
  'bos_token',
  'eos_token',
  'unk_token',
  'sep_token',
  'pad_token',
  'cls_token',
  'mask_token',
] as const;

/** A chat_template in tokenizer_config.json: one template, or the list form with named ones ("default", "tool_use"). */
type ChatTemplateSource = string | Record<string, string>;

export class ChatTokenizer {
  /** Token text per id, filled lazily: stop-string matching decodes one token per step. */
  private readonly pieceCache = new Map<number, string>();
  private readonly compiled = new Map<string, Template>();

  private constructor(
    private readonly tok: Tokenizer,
    private readonly chatTemplate: ChatTemplateSource,
    /** bos_token, eos_token, ... as the template sees them. */
    private readonly specialTokens: Record<string, string>,
    /** Extra variables for the template (e.g. `enable_thinking: false` for Qwen3). */
    private readonly templateKwargs: Record<string, unknown>,
    /** Ids the tokenizer knows (the model's vocabulary may be padded past it). */
    readonly tokenizerVocabSize: number,
    /** The id of the tokenizer's eos_token, if it has one. */
    readonly eosTokenId: number | undefined,
  ) {}

  /**
   * Loads `tokenizer.json` + `tokenizer_config.json` (and `chat_template.jinja` when present) from `dir`.
   * `chatTemplate` replaces the bundle's template (one that renders history verbatim, say).
   */
  static async load(dir: string, opts: TokenizerOptions = {}): Promise<ChatTokenizer> {
    const readJson = (name: string): Record<string, unknown> => {
      const path = join(dir, name);
      try {
        return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      } catch (err) {
        throw new Error(`cannot read ${path}: ${(err as Error).message}`);
      }
    };
    const json = readJson('tokenizer.json');
    const config = readJson('tokenizer_config.json');
    if (opts.chatTemplate !== undefined) config.chat_template = opts.chatTemplate;
    const jinja = join(dir, 'chat_template.jinja');
    if (config.chat_template === undefined && existsSync(jinja))
      config.chat_template = readFileSync(jinja, 'utf8');
    const chatTemplate = templateSource(config.chat_template, dir);
    const specialTokens: Record<string, string> = {};
    for (const key of SPECIAL_TOKEN_KEYS) {
      const value = tokenFromConfig(config, key, dir);
      if (value) specialTokens[key] = value;
    }
    const tok = new Tokenizer(json, config);
    let maxId = -1;
    for (const id of tok.get_vocab().values()) if (id > maxId) maxId = id;
    const eos = specialTokens.eos_token;
    const eosId = eos === undefined ? undefined : tok.token_to_id(eos);
    return new ChatTokenizer(tok, chatTemplate, specialTokens, opts.templateKwargs ?? {}, maxId + 1, eosId);
  }

  /** The chat template applied to a conversation, as text (an empty tool list is no tools). */
  render(messages: readonly ChatMessage[], tools: readonly ToolSchema[], opts: RenderOptions): string {
    return this.applyChatTemplate(messages.map(toTemplateMessage), {
      tools: tools.length > 0 ? tools : null,
      addGenerationPrompt: opts.addGenerationPrompt,
    });
  }

  /**
   * Hugging Face's `apply_chat_template(conversation, tools=tools, tokenize=False)`: the messages and tools go to
   * the template as given (`tools` undefined is none), beside the special tokens and the extra variables.
   */
  applyChatTemplate(
    conversation: readonly Record<string, unknown>[],
    opts: { tools?: readonly unknown[] | null; addGenerationPrompt: boolean },
  ): string {
    const tools = opts.tools ?? null;
    return this.template(tools !== null).render({
      messages: conversation,
      add_generation_prompt: opts.addGenerationPrompt,
      tools,
      documents: null,
      ...this.specialTokens,
      ...this.templateKwargs,
    });
  }

  /** Tokenises template text; special tokens written in it (`<|im_start|>`) become their ids, none are added. */
  encode(text: string): number[] {
    if (text.length === 0) return [];
    return this.tok.encode(text, { add_special_tokens: false }).ids;
  }

  /** Exact text of a token sequence: special tokens kept, no clean-up; ids past the tokenizer's vocabulary are dropped. */
  decode(ids: readonly number[]): string {
    const known = ids.filter((id) => id < this.tokenizerVocabSize);
    if (known.length === 0) return '';
    return this.tok.decode(known, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  /** Text of one token on its own (a byte-level piece may be half a character; fine for ASCII stop strings). */
  piece(id: number): string {
    let s = this.pieceCache.get(id);
    if (s === undefined) {
      s = this.decode([id]);
      this.pieceCache.set(id, s);
    }
    return s;
  }

  /** The id of `text` when it is exactly one token in this vocabulary (`</tool_call>` in Qwen's). */
  singleTokenId(text: string): number | undefined {
    const ids = this.encode(text);
    return ids.length === 1 && this.decode(ids) === text ? ids[0] : undefined;
  }

  /** The compiled template; of the list form, "tool_use" when tools are given and it exists, else "default". */
  private template(withTools: boolean): Template {
    let source: string;
    if (typeof this.chatTemplate === 'string') {
      if (!this.chatTemplate) throw new Error('this tokenizer was loaded without a chat template');
      source = this.chatTemplate;
    } else {
      const named = this.chatTemplate;
      const name = withTools && 'tool_use' in named ? 'tool_use' : 'default';
      if (!(name in named))
        throw new Error(
          `the tokenizer has several chat templates and none named "default" (${Object.keys(named).sort().join(', ')})`,
        );
      source = named[name]!;
    }
    let t = this.compiled.get(source);
    if (t === undefined) {
      t = new Template(source);
      this.compiled.set(source, t);
    }
    return t;
  }
}

function templateSource(value: unknown, dir: string): ChatTemplateSource {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value))
    throw new Error(
      `${dir} has no chat template (tokenizer_config.json "chat_template" or chat_template.jinja)`,
    );
  const named: Record<string, string> = Object.create(null);
  for (const entry of value as { name?: unknown; template?: unknown }[]) {
    if (typeof entry?.name !== 'string' || typeof entry.template !== 'string')
      throw new Error(`${dir}: a chat_template list holds objects with "name" and "template" strings`);
    named[entry.name] = entry.template;
  }
  return named;
}

// tokenizer_config.json writes a special token as its text or as an AddedToken object ({"content": ...}).
function tokenFromConfig(config: Record<string, unknown>, key: string, dir: string): string | null {
  const item = config[key];
  if (!item) return null;
  if (typeof item === 'string') return item;
  const content = (item as { content?: unknown }).content;
  if (typeof content === 'string') return content;
  throw new Error(`${dir}: tokenizer_config.json "${key}" is neither a string nor an AddedToken`);
}

// The template reads OpenAI-style keys; drop absent ones so `message.tool_calls is defined` tests stay false.
function toTemplateMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: m.content };
  if (m.tool_calls !== undefined) out.tool_calls = m.tool_calls;
  if (m.name !== undefined) out.name = m.name;
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}
