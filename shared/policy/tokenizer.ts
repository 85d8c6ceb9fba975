// The bundle's tokenizer and chat template, through transformers.js (its tokenizer and @huggingface/jinja), so
// prompts render exactly as `tokenizer.apply_chat_template` renders them in Python.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PreTrainedTokenizer } from '@huggingface/transformers';
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

export class ChatTokenizer {
  /** Token text per id, filled lazily: stop-string matching decodes one token per step. */
  private readonly pieceCache = new Map<number, string>();

  private constructor(
    private readonly tok: PreTrainedTokenizer,
    /** Extra variables for the template (e.g. `enable_thinking: false` for Qwen3). */
    private readonly templateKwargs: Record<string, unknown>,
    /** Ids the tokenizer knows (the model's vocabulary may be padded past it). */
    readonly tokenizerVocabSize: number,
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
    if (typeof config.chat_template !== 'string' && !Array.isArray(config.chat_template))
      throw new Error(
        `${dir} has no chat template (tokenizer_config.json "chat_template" or chat_template.jinja)`,
      );
    const transformers = await import('@huggingface/transformers');
    // The class named by tokenizer_config.json, as AutoTokenizer picks it; the base class otherwise.
    const name = String(config.tokenizer_class ?? 'PreTrainedTokenizer').replace(/Fast$/, '');
    const Cls = ((transformers as unknown as Record<string, unknown>)[name] ??
      transformers.PreTrainedTokenizer) as typeof PreTrainedTokenizer;
    const tok = new Cls(json, config);
    const vocab = tok.get_vocab();
    let maxId = -1;
    for (const id of vocab.values()) if (id > maxId) maxId = id;
    return new ChatTokenizer(tok, opts.templateKwargs ?? {}, maxId + 1);
  }

  /** The chat template applied to a conversation, as text. */
  render(messages: readonly ChatMessage[], tools: readonly ToolSchema[], opts: RenderOptions): string {
    const conversation = messages.map(toTemplateMessage);
    return this.tok.apply_chat_template(conversation as never, {
      tools: tools.length > 0 ? (tools as object[]) : null,
      add_generation_prompt: opts.addGenerationPrompt,
      tokenize: false,
      ...this.templateKwargs,
    }) as string;
  }

  /** Tokenises template text; special tokens written in it (`<|im_start|>`) become their ids, none are added. */
  encode(text: string): number[] {
    if (text.length === 0) return [];
    return this.tok.encode(text, { add_special_tokens: false });
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

  /** The id of the tokenizer's eos_token, if it has one. */
  get eosTokenId(): number | undefined {
    const id = this.tok.eos_token_id;
    return typeof id === 'number' ? id : undefined;
  }
}

// The template reads OpenAI-style keys; drop absent ones so `message.tool_calls is defined` tests stay false.
function toTemplateMessage(m: ChatMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { role: m.role, content: m.content };
  if (m.tool_calls !== undefined) out.tool_calls = m.tool_calls;
  if (m.name !== undefined) out.name = m.name;
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}
