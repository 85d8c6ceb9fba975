// Prefix caching for prompts (`rollout.enable_prefix_caching`): the head of a prompt (what the chat template renders
// for its leading system messages and the tool schemas, up to the first other message) is the same for every prompt
// of a dataset with one system prompt and one tool set, and on a real model it is most of the prompt (SmolLM2's
// calculator prompts: 187 of ~224 tokens). A policy version prefills each distinct head once, in a pass of its own,
// keeps its KV cache, and starts every prompt with that head from it, prefilling only the rest.
//
// Where a prompt is split is a function of the prompt alone (never of which heads happen to be cached), and a head's
// pass is the same pass whenever it runs, so a deterministic run samples the same tokens whether a head was cached,
// evicted or computed in another process (policy.ts replays continuations through the same split). The split pass
// rounds differently from one pass over the whole prompt (onnxruntime's attention over several query rows is not
// row-for-row equal to the same rows in a longer pass), which is why it is an option and not the default: turning
// it on changes a deterministic run's numbers.
import { LRUCache } from 'lru-cache';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { KvCache } from './kv-cache.ts';
import type { ChatTokenizer } from './tokenizer.ts';

/** A head shorter than this is prefilled with its prompt: a pass of its own would save next to nothing. */
export const MIN_HEAD_TOKENS = 32;
/** Distinct heads kept per policy version (least recently used dropped first). */
const MAX_HEADS = 4;
/** Rendered heads remembered per policy version (the rendering and tokenising, not the cache). */
const MAX_RENDERED = 64;

export class PromptHeads {
  private readonly caches = new LRUCache<string, Promise<KvCache>>({ max: MAX_HEADS });
  /** `ids: null` when the template cannot render the system part alone. */
  private readonly rendered = new LRUCache<string, { ids: readonly number[] | null }>({ max: MAX_RENDERED });

  constructor(
    private readonly tokenizer: ChatTokenizer,
    /** One pass of `tokens` on an empty cache, alone: the head's keys and values. */
    private readonly prefill: (tokens: readonly number[]) => Promise<KvCache>,
  ) {}

  /**
   * How many leading tokens of `ids` (a prompt rendered from `messages` and `tools`, or a trajectory that starts
   * with it) are its head; 0 when it has none worth a pass: no system block is rendered, the head's own tokens are
   * not a prefix of `ids` (a tokenizer merging across the boundary), it is shorter than MIN_HEAD_TOKENS, or it is
   * the whole prompt.
   */
  length(
    messages: readonly ChatMessage[],
    tools: readonly ToolSchema[],
    ids: readonly number[],
    promptLength = ids.length,
  ): number {
    const first = messages.findIndex((m) => m.role !== 'system');
    if (first < 0) return 0;
    const head = this.render(messages.slice(0, first), tools);
    if (!head || head.length < MIN_HEAD_TOKENS || head.length >= promptLength) return 0;
    return head.every((t, i) => ids[i] === t) ? head.length : 0;
  }

  /** The KV cache of `head` (the first `length()` tokens of a prompt), prefilled once and kept. */
  cache(head: readonly number[]): Promise<KvCache> {
    const key = head.join(',');
    let kept = this.caches.get(key);
    if (!kept) {
      kept = this.prefill(head);
      this.caches.set(key, kept);
      // A failed pass is not kept: the next prompt with this head tries again.
      kept.catch(() => {
        if (this.caches.peek(key) === kept) this.caches.delete(key);
      });
    }
    return kept;
  }

  /** The head's tokens: the template's rendering of the system messages and tools alone, tokenised. */
  private render(system: readonly ChatMessage[], tools: readonly ToolSchema[]): readonly number[] | null {
    const key = JSON.stringify([system, tools]);
    const known = this.rendered.get(key);
    if (known) return known.ids;
    let ids: readonly number[] | null;
    try {
      ids = this.tokenizer.encode(this.tokenizer.render(system, tools, { addGenerationPrompt: false }));
    } catch {
      ids = null; // a template that cannot render the system part alone: such prompts are prefilled whole
    }
    this.rendered.set(key, { ids });
    return ids;
  }
}
