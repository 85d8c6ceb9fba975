// The rollout policy: a loaded bundle that renders prompts, samples groups and continues trajectories after tool
// results, recording every sampled token's log-prob and the policy version that sampled it.
import { join } from 'node:path';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { BundleManifest } from '#shared/schemas/policy';
import type { TurnStop } from '#shared/schemas/trajectory';
import { SlotBatcher } from './batcher.ts';
import { type BundleCheck, readBundle } from './bundle.ts';
import { CacheStore, DEFAULT_CACHE_BYTES } from './cache-store.ts';
import { type Decoding, emptyStats, type LoopStats, type RowSpec, StandardDecoding } from './decode-loop.ts';
import { KvCache, type KvShape, recycleRow } from './kv-cache.ts';
import { OnnxDecoder } from './onnx-decoder.ts';
import { PromptHeads } from './prompt-head.ts';
import { checkSamplingParams, Sampler, type SamplingParams } from './sampler.ts';
import { SamplerGraph } from './sampler-graph.ts';
import { SLOTS_GRAPH_FILE, SlotDecoder, type SpareCores } from './slot-decoder.ts';
import { type StopSpec, stopSpecFor } from './stops.ts';
import { responseLength, type TokenState } from './token-state.ts';
import { ChatTokenizer, type TokenizerOptions } from './tokenizer.ts';
import { appendMessages, appendTurn, PrefixBreakError, startState, turnContent } from './turns.ts';

export interface LoadPolicyOptions extends TokenizerOptions {
  /** The policy version recorded on sampled tokens; defaults to the manifest's. */
  version?: number;
  /** The decoder's ORT intra-op threads (default: the cores available); the sampling graph always runs on 1. */
  threads?: number;
  /** More threads for the slots graph while other cores are idle (slot-decoder.ts, SpareCores). */
  spare?: SpareCores;
  /** Bundle check before loading: file sizes (default) or sha256 of every file. */
  check?: BundleCheck;
  /** Bytes of KV cache kept between turns in this process (default 1 GiB; 0 disables). */
  cacheBytes?: number;
  /** A store shared with the process's other versions (policies.ts), instead of one of `cacheBytes` of its own. */
  caches?: CacheStore;
  /** Sample through onnxruntime's kernels (default) or in plain JS (same draws, slower: a reference). */
  sampler?: 'onnx' | 'js';
  /** The tokenizer and sampling graph of an earlier version with the same tokenizer files (see loadPolicyParts). */
  parts?: PolicyParts;
  /**
   * Which graph decodes: `slots` (the bundle's model.slots.onnx: one running batch shared by every request, no
   * cache copies; the default when the bundle has it) or `standard` (model.onnx: each request decodes alone).
   */
  graph?: 'slots' | 'standard';
}

/**
 * What does not change when only the weights do: the tokenizer (parsing a 151k-token tokenizer.json takes a
 * noticeable part of a second) and the sampling graph (weightless). A run's versions share one set; the caller that
 * made it disposes it, never a policy.
 */
export interface PolicyParts {
  readonly tokenizer: ChatTokenizer;
  readonly graph: SamplerGraph | undefined;
  dispose(): Promise<void>;
}

/** Versions whose bundles give the same key can share PolicyParts: the tokenizer files' digests and the vocabulary. */
export function policyPartsKey(manifest: BundleManifest): string {
  const tokenizerFiles = Object.entries(manifest.files)
    .filter(([name]) => name !== 'model.onnx' && !name.startsWith('model.onnx'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, f]) => `${name}:${f.sha256}`);
  return `${manifest.vocabSize}|${tokenizerFiles.join(',')}`;
}

export async function loadPolicyParts(bundleDir: string, opts: LoadPolicyOptions = {}): Promise<PolicyParts> {
  const bundle = await readBundle(bundleDir, opts.check ?? 'size');
  const tokenizer = await ChatTokenizer.load(bundle.dir, opts);
  const graph = opts.sampler === 'js' ? undefined : await SamplerGraph.create(bundle.manifest.vocabSize);
  return { tokenizer, graph, dispose: async () => graph?.dispose() };
}

export interface TurnSample {
  tokenIds: number[];
  /** log softmax(logits / temperature) of each sampled token. */
  logprobs: number[];
  stop: TurnStop;
  /** The decoded sampled text without a final EOS token. */
  text: string;
}

export interface GroupStart {
  promptIds: number[];
  /** One state per sample, its first turn appended. */
  states: TokenState[];
  samples: TurnSample[];
}

export interface Continuation {
  state: TokenState;
  sample: TurnSample;
  /** The total response budget was spent by the appended messages: nothing was sampled. */
  budgetExhausted: boolean;
}

/** One item of continueTrajectories: the continuation, or the prefix break that stopped it. */
export type ContinueResult =
  | ({ ok: true } & Continuation)
  | { ok: false; error: PrefixBreakError; state: TokenState };

export interface PolicyMetrics extends LoopStats {
  prefixChecks: number;
  prefixBreaks: number;
  cacheHits: number;
  cacheMisses: number;
}

export class Policy {
  private readonly caches: CacheStore;
  private readonly counters: PolicyMetrics = {
    ...emptyStats(),
    prefixChecks: 0,
    prefixBreaks: 0,
    cacheHits: 0,
    cacheMisses: 0,
  };
  private readonly decoding: Decoding;
  private readonly stops: StopSpec;
  /** Prompt heads prefilled once for this version (SamplingParams.prefixCache; prompt-head.ts). */
  private readonly heads: PromptHeads;

  constructor(
    readonly manifest: BundleManifest,
    readonly tokenizer: ChatTokenizer,
    decoder: OnnxDecoder | SlotDecoder,
    readonly version: number,
    caches: CacheStore,
    private readonly graph?: SamplerGraph,
    /** Whether dispose() disposes the graph (false when it is shared PolicyParts). */
    private readonly ownsGraph = true,
  ) {
    const sampler = new Sampler(decoder.vocabSize);
    this.stops = stopSpecFor(manifest.eosTokenIds, tokenizer);
    this.caches = caches;
    this.kv = decoder.kv;
    this.decoding =
      decoder instanceof SlotDecoder
        ? new SlotBatcher(decoder, sampler, graph, this.stops, this.counters)
        : new StandardDecoding(decoder, sampler, graph, this.stops, this.counters);
    this.heads = new PromptHeads(tokenizer, (ids) => this.decoding.extend(KvCache.empty(this.kv, 1), ids));
  }

  private readonly kv: KvShape;

  /** This version's tag in a cache store shared with other versions. */
  private get cacheOwner(): string {
    return `v${this.version}`;
  }

  /** The conversation rendered through the chat template with the generation prompt, tokenised. */
  renderPrompt(messages: readonly ChatMessage[], tools: readonly ToolSchema[] = []): number[] {
    return this.tokenizer.encode(this.tokenizer.render(messages, tools, { addGenerationPrompt: true }));
  }

  /** G samples of one prompt: one prefill shared by all, then one batched decode. Sample i draws from stream (seed, i, 0). */
  async sampleGroup(promptIds: readonly number[], n: number, s: SamplingParams): Promise<TurnSample[]> {
    checkSamplingParams(s);
    if (!(Number.isInteger(n) && n >= 1))
      throw new RangeError(`sampleGroup: n must be an integer >= 1, got ${n}`);
    if (promptIds.length === 0) throw new RangeError('sampleGroup: empty prompt');
    const budget = Math.min(s.maxNewTokens, s.maxTotalResponseTokens ?? Number.POSITIVE_INFINITY);
    const rows: RowSpec[] = Array.from({ length: n }, (_, i) => ({ sampleIndex: i, turn: 0, budget }));
    const results = await this.decoding.decodeRows({
      past: KvCache.empty(this.kv, 1),
      feed: promptIds,
      rows,
      params: s,
    });
    return results.map((r) => ({ ...r, text: turnContent(this.tokenizer, r.tokenIds, r.stop) }));
  }

  /** Renders the prompt, samples the group's first turns and returns one serialisable state per sample. */
  async startGroup(
    messages: readonly ChatMessage[],
    tools: readonly ToolSchema[],
    n: number,
    s: SamplingParams,
  ): Promise<GroupStart> {
    checkSamplingParams(s);
    const promptText = this.tokenizer.render(messages, tools, { addGenerationPrompt: true });
    const promptIds = this.tokenizer.encode(promptText);
    const budget = Math.min(s.maxNewTokens, s.maxTotalResponseTokens ?? Number.POSITIVE_INFINITY);
    const kept = new Map<number, KvCache>();
    const head = s.prefixCache ? this.heads.length(messages, tools, promptIds) : 0;
    const results = await this.decoding.decodeRows({
      past: head > 0 ? await this.heads.cache(promptIds.slice(0, head)) : KvCache.empty(this.kv, 1),
      feed: promptIds.slice(head),
      rows: Array.from({ length: n }, (_, i) => ({ sampleIndex: i, turn: 0, budget })),
      params: s,
      ...(this.caches.budgetBytes > 0 ? { retain: (r: number, cache: KvCache) => kept.set(r, cache) } : {}),
    });
    const samples = results.map((r) => ({ ...r, text: turnContent(this.tokenizer, r.tokenIds, r.stop) }));
    const states = samples.map((sample, i) => {
      const begun = startState({ sampleIndex: i, seed: s.seed, messages, tools, promptText, promptIds });
      const state = appendTurn(begun, sample, this.version, this.tokenizer);
      return { ...state, cacheKey: this.keep(state.tokenIds, kept.get(i)) };
    });
    return { promptIds, states, samples };
  }

  /**
   * Appends `messages` (tool results) as the template's delta and samples the next turn. Keeps the KV cache when
   * the state was sampled in this process; re-prefills the whole trajectory otherwise. Throws PrefixBreakError
   * (counted in metrics) when the template no longer extends the trajectory's tokens.
   */
  async continueTrajectory(
    state: TokenState,
    messages: readonly ChatMessage[],
    s: SamplingParams,
    opts: ContinueOptions = {},
  ): Promise<Continuation> {
    const [r] = await this.continueTrajectories([{ state, messages }], s, opts);
    if (!r!.ok) throw r!.error;
    return r!;
  }

  /**
   * continueTrajectory for many trajectories at once, decoded as one batch (caches and new tokens left-padded
   * and masked). A prefix break fails only its own item. Each trajectory keeps its own seed and sample index.
   */
  async continueTrajectories(
    items: readonly { state: TokenState; messages: readonly ChatMessage[] }[],
    s: SamplingParams,
    opts: ContinueOptions = {},
  ): Promise<ContinueResult[]> {
    checkSamplingParams(s);
    const out: ContinueResult[] = new Array(items.length);
    const taken: KvCache[] = []; // the pasts taken from the store (see below)
    const work: {
      index: number;
      next: TokenState;
      past: KvCache | Promise<KvCache>;
      budget: number;
      replay?: number[][];
    }[] = [];
    items.forEach(({ state, messages }, index) => {
      this.counters.prefixChecks++;
      let next: TokenState;
      try {
        next = appendMessages(state, messages, this.tokenizer, this.stops.eosIds).state;
      } catch (err) {
        if (!(err instanceof PrefixBreakError)) throw err;
        this.counters.prefixBreaks++;
        out[index] = { ok: false, error: err, state: err.state };
        return;
      }
      const left = (s.maxTotalResponseTokens ?? Number.POSITIVE_INFINITY) - responseLength(next);
      const budget = Math.min(s.maxNewTokens, left);
      if (budget <= 0) {
        out[index] = {
          ok: true,
          state: { ...next, cacheKey: null },
          sample: { tokenIds: [], logprobs: [], stop: 'length', text: '' },
          budgetExhausted: true,
        };
        return;
      }
      const cached = this.caches.take(state.cacheKey, next.tokenIds, this.cacheOwner);
      if (cached) {
        taken.push(cached);
        this.counters.cacheHits++;
      } else this.counters.cacheMisses++;
      // Without its kept cache a trajectory starts again from its prompt's head when there is one: the head's
      // pass is the one its first turn ran on (startGroup), so an exact replay replays only the passes after it.
      const head =
        cached || !s.prefixCache
          ? 0
          : this.heads.length(state.messages, state.tools, state.tokenIds, state.promptLength);
      const passes = !cached && opts.exact ? passesOf(state, head) : undefined;
      work.push({
        index,
        next,
        past:
          cached ?? (head > 0 ? this.heads.cache(state.tokenIds.slice(0, head)) : KvCache.empty(this.kv, 1)),
        budget,
        ...(passes ? { replay: head > 0 ? passes.slice(1) : passes } : {}),
      });
    });
    const pasts = await Promise.all(work.map((w) => w.past));
    const kept = new Map<number, KvCache>();
    // The caches taken from the store are read only while their rows are admitted: their arrays go back to the row
    // pool once the batch is done (kv-cache.ts recycleRow), whatever happened to it.
    const results = await this.decoding
      .decodeEach({
        items: work.map((w, r) => ({
          past: pasts[r]!,
          ...(w.replay ? { replay: w.replay } : {}),
          feed: w.next.tokenIds.slice(
            pasts[r]!.length + (w.replay?.reduce((n, seg) => n + seg.length, 0) ?? 0),
          ),
          row: {
            sampleIndex: w.next.sampleIndex,
            turn: w.next.turns.length,
            seed: w.next.seed,
            budget: w.budget,
          },
        })),
        params: s,
        ...(this.caches.budgetBytes > 0 ? { retain: (r: number, cache: KvCache) => kept.set(r, cache) } : {}),
      })
      .finally(() => {
        for (const c of taken) recycleRow(c);
      });
    work.forEach((w, r) => {
      const result = results[r]!;
      const sample = { ...result, text: turnContent(this.tokenizer, result.tokenIds, result.stop) };
      const after = appendTurn(w.next, sample, this.version, this.tokenizer);
      out[w.index] = {
        ok: true,
        state: { ...after, cacheKey: this.keep(after.tokenIds, kept.get(r)) },
        sample,
        budgetExhausted: false,
      };
    });
    return out;
  }

  /** Counters since load: prefill/decode tokens and time, prefix checks and breaks, cache hits and misses. */
  get metrics(): PolicyMetrics {
    return { ...this.counters };
  }

  async dispose(): Promise<void> {
    await this.decoding.dispose();
    if (this.ownsGraph) await this.graph?.dispose();
  }

  /** The trajectory holding `state` has ended: its KV cache, if this process keeps it, is no longer needed. */
  endTrajectory(state: Pick<TokenState, 'cacheKey'>): void {
    this.caches.free(state.cacheKey, this.cacheOwner);
  }

  private keep(tokenIds: readonly number[], cache: KvCache | undefined): string | null {
    if (!cache) return null;
    return this.caches.put(tokenIds.slice(0, cache.length), cache, this.cacheOwner);
  }
}

export interface ContinueOptions {
  /**
   * A continuation whose KV cache this process does not hold (sampled in a process since killed, or evicted)
   * rebuilds it with the passes that first computed it (passesOf), so its next turn samples bit for bit what it
   * would have on the kept cache; otherwise it re-prefills the trajectory in one pass (faster, rounded differently:
   * near a tie a token could differ). Deterministic runs ask for it.
   */
  exact?: boolean;
}

/**
 * The forward passes that computed the kept cache of a trajectory's tokens but its last sampled one: each turn's
 * prefill (the prompt, or the previous turn's last token and the delta appended after it) and then one pass per
 * sampled token but the turn's last. With `head` > 0 the prompt was prefilled in two passes, its first `head` tokens
 * and then the rest (prompt-head.ts). Undefined when the state's turns do not account for its tokens.
 */
export function passesOf(state: TokenState, head = 0): number[][] | undefined {
  const ids = state.tokenIds;
  const last = state.turns.at(-1);
  if (!last || last.tokenEnd !== ids.length) return undefined;
  const passes: number[][] = [];
  let held = 0;
  if (head > 0) {
    if (head >= state.turns[0]!.tokenStart) return undefined;
    passes.push(ids.slice(0, head));
    held = head;
  }
  for (const t of state.turns) {
    if (t.tokenEnd <= t.tokenStart || t.tokenStart <= held) return undefined;
    passes.push(ids.slice(held, t.tokenStart));
    for (let k = t.tokenStart; k < t.tokenEnd - 1; k++) passes.push([ids[k]!]);
    held = t.tokenEnd - 1;
  }
  return passes;
}

/** Loads a rollout bundle: checks it against its manifest, then the tokenizer and the ONNX session. */
export async function loadPolicy(bundleDir: string, opts: LoadPolicyOptions = {}): Promise<Policy> {
  const bundle = await readBundle(bundleDir, opts.check ?? 'size');
  const m = bundle.manifest;
  const tokenizer = opts.parts?.tokenizer ?? (await ChatTokenizer.load(bundle.dir, opts));
  const kv = { numLayers: m.numLayers, numKvHeads: m.numKeyValueHeads, headDim: m.headDim };
  const threads = opts.threads !== undefined ? { threads: opts.threads } : {};
  const slots = (opts.graph ?? 'slots') === 'slots' && SLOTS_GRAPH_FILE in m.files;
  const decoder = slots
    ? await SlotDecoder.load(join(bundle.dir, SLOTS_GRAPH_FILE), kv, m.vocabSize, {
        ...threads,
        ...(opts.spare ? { spare: opts.spare } : {}),
      })
    : await OnnxDecoder.load(bundle.modelPath, kv, m.vocabSize, {
        ...threads,
        paddedRows: (m.export?.variant ?? 'standard') === 'standard',
      });
  const version = opts.version ?? m.version;
  const caches = opts.caches ?? new CacheStore(opts.cacheBytes ?? DEFAULT_CACHE_BYTES);
  if (opts.parts) {
    const graph = opts.sampler === 'js' ? undefined : opts.parts.graph;
    return new Policy(m, tokenizer, decoder, version, caches, graph, false);
  }
  const graph = opts.sampler === 'js' ? undefined : await SamplerGraph.create(m.vocabSize);
  return new Policy(m, tokenizer, decoder, version, caches, graph);
}
