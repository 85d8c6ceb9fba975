// The sampling loop. Group sampling prefills the shared tokens once, draws every row's first token from that one
// pass, tiles the cache over the rows and decodes them as one batch. Continuations of different trajectories
// are batched too: their caches and new tokens are left-padded to a common width and masked. Rows that stop
// leave the batch (their cache can be kept for the next turn).
import type { TurnStop } from '#shared/schemas/trajectory';
import { KvCache } from './kv-cache.ts';
import type { OnnxDecoder } from './onnx-decoder.ts';
import { samplingStream, type Uniform } from './rng.ts';
import type { Sampler, SamplingParams } from './sampler.ts';
import type { PreparedRows, SamplerGraph } from './sampler-graph.ts';
import { RowStop, type StopSpec } from './stops.ts';

export interface RowSpec {
  sampleIndex: number;
  turn: number;
  /** The row's seed (a trajectory keeps the one it started with); defaults to the sampling params'. */
  seed?: number;
  /** Tokens this row may sample (>= 1). */
  budget: number;
}

export interface RowResult {
  tokenIds: number[];
  logprobs: number[];
  stop: TurnStop;
}

/** Called when a row stops, with a one-row cache of every token fed before its last sampled one. */
export type RetainCache = (row: number, cache: KvCache) => void;

export interface LoopStats {
  prefillTokens: number;
  prefillMs: number;
  decodeSteps: number;
  decodeTokens: number;
  decodeMs: number;
  sampleMs: number;
}

export const emptyStats = (): LoopStats => ({
  prefillTokens: 0,
  prefillMs: 0,
  decodeSteps: 0,
  decodeTokens: 0,
  decodeMs: 0,
  sampleMs: 0,
});

/** `into` plus `more`, counter by counter (the engine's time over several policy versions). */
export function addStats(into: LoopStats, more: LoopStats): LoopStats {
  for (const k of Object.keys(into) as (keyof LoopStats)[]) into[k] += more[k];
  return into;
}

interface Common {
  decoder: OnnxDecoder;
  sampler: Sampler;
  /** Sampling through onnxruntime (same draws, a fraction of the JS time); the JS sampler alone without it. */
  graph?: SamplerGraph;
  params: SamplingParams;
  stops: StopSpec;
  retain?: RetainCache;
  stats?: LoopStats;
}

/** One row of the running batch. */
export interface Lane {
  row: number;
  stream: Uniform;
  stop: RowStop;
  result: RowResult;
  /** Per cache column: 1 for a real token, 0 for padding. */
  valid: number[];
  /** Position of the next token fed (real tokens so far). */
  pos: number;
}

const now = () => performance.now();

export function lanes(rows: readonly RowSpec[], params: SamplingParams, stops: StopSpec): Lane[] {
  return rows.map((r, row) => ({
    row,
    stream: samplingStream(r.seed ?? params.seed, r.sampleIndex, r.turn),
    stop: new RowStop(stops, params.stopOnToolCallEnd, r.budget),
    result: { tokenIds: [], logprobs: [], stop: 'length' },
    valid: [],
    pos: 0,
  }));
}

/** A forward pass's logits rows, prepared by the sampling graph when there is one. */
export interface Rows {
  logits: Float32Array;
  prepared: PreparedRows | null;
}

/** What drawing a token needs: the vocabulary, the samplers and the row's sampling params. */
export interface DrawContext {
  readonly decoder: { readonly vocabSize: number };
  readonly sampler: Sampler;
  readonly graph?: SamplerGraph;
  readonly params: SamplingParams;
}

export async function rowsOf(c: DrawContext, logits: Float32Array, count: number): Promise<Rows> {
  return { logits, prepared: c.graph ? await c.graph.prepare(logits, count, c.params) : null };
}

/** Draws one token for a lane from row r; true when its turn ends there. */
export function draw(c: DrawContext, lane: Lane, rows: Rows, r: number): boolean {
  const V = c.decoder.vocabSize;
  const d = rows.prepared
    ? c.graph!.draw(rows.prepared, r, c.params, lane.stream, c.sampler)
    : c.sampler.draw(rows.logits.subarray(r * V, (r + 1) * V), c.params, lane.stream);
  lane.result.tokenIds.push(d.token);
  lane.result.logprobs.push(d.logprob);
  const stop = lane.stop.accept(d.token);
  if (stop) lane.result.stop = stop;
  return stop !== null;
}

/** A one-row cache of lane j's real tokens (padding columns dropped). */
function keep(cache: KvCache, j: number, lane: Lane): KvCache {
  return lane.valid.every((v) => v === 1) ? cache.gather([j]) : cache.compactRow(j, lane.valid);
}

/**
 * Samples rows.length continuations of `past` + `feed` (a one-row cache and the tokens not in it yet), sharing
 * one prefill. Row r draws from the stream (s.seed, rows[r].sampleIndex, rows[r].turn).
 */
export async function decodeRows(
  args: Common & { past: KvCache; feed: readonly number[]; rows: readonly RowSpec[] },
): Promise<RowResult[]> {
  const { decoder, feed, past, stats } = args;
  if (feed.length === 0) throw new Error('decodeRows: nothing to feed (the cache already holds every token)');
  const all = lanes(args.rows, args.params, args.stops);
  let t0 = now();
  const prefill = await decoder.forward([feed], past, true);
  if (stats) {
    stats.prefillTokens += feed.length;
    stats.prefillMs += now() - t0;
  }
  // Every row's first token comes from the one prefilled distribution, each with its own stream.
  t0 = now();
  const rows = await rowsOf(args, prefill.logits, 1);
  const active: Lane[] = [];
  for (const lane of all) {
    lane.valid = new Array(prefill.present.length).fill(1);
    lane.pos = prefill.present.length;
    if (draw(args, lane, rows, 0)) args.retain?.(lane.row, prefill.present);
    else active.push(lane);
  }
  if (stats) stats.sampleMs += now() - t0;
  if (active.length > 0) await decodeLoop(args, active, prefill.present.gather(active.map(() => 0)));
  return all.map((l) => l.result);
}

/**
 * Samples one continuation per item, each on its own one-row cache plus its own new tokens, as one batch:
 * caches and tokens are left-padded to common widths and the padding masked out.
 */
export async function decodeEach(
  args: Common & { items: readonly { past: KvCache; feed: readonly number[]; row: RowSpec }[] },
): Promise<RowResult[]> {
  const { decoder, items, stats } = args;
  if (items.length === 0) return [];
  if (items.some((it) => it.feed.length === 0 || it.past.batch !== 1))
    throw new Error('decodeEach: every item needs a one-row cache and at least one new token');
  const all = lanes(
    items.map((it) => it.row),
    args.params,
    args.stops,
  );
  const pastWidth = Math.max(...items.map((it) => it.past.length));
  const feedWidth = Math.max(...items.map((it) => it.feed.length));
  const B = items.length;
  const total = pastWidth + feedWidth;
  const tokens: number[][] = [];
  const mask = new BigInt64Array(B * total);
  const positions = new BigInt64Array(B * feedWidth);
  items.forEach((it, b) => {
    const lane = all[b]!;
    const padPast = pastWidth - it.past.length;
    const padFeed = feedWidth - it.feed.length;
    lane.valid = new Array(total).fill(0);
    for (let j = padPast; j < pastWidth; j++) lane.valid[j] = 1;
    for (let j = pastWidth + padFeed; j < total; j++) lane.valid[j] = 1;
    for (let j = 0; j < total; j++) mask[b * total + j] = BigInt(lane.valid[j]!);
    tokens.push([...new Array<number>(padFeed).fill(0), ...it.feed]);
    for (let j = 0; j < it.feed.length; j++)
      positions[b * feedWidth + padFeed + j] = BigInt(it.past.length + j);
    lane.pos = it.past.length + it.feed.length;
  });
  const past = KvCache.padLeft(
    items.map((it) => it.past),
    pastWidth,
  );
  let t0 = now();
  const prefill = await decoder.forward(tokens, past, true, { mask, positions });
  if (stats) {
    stats.prefillTokens += items.reduce((n, it) => n + it.feed.length, 0);
    stats.prefillMs += now() - t0;
  }
  t0 = now();
  const rows = await rowsOf(args, prefill.logits, B);
  const active: Lane[] = [];
  const keepRows: number[] = [];
  all.forEach((lane, b) => {
    if (draw(args, lane, rows, b)) args.retain?.(lane.row, keep(prefill.present, b, lane));
    else {
      active.push(lane);
      keepRows.push(b);
    }
  });
  if (stats) stats.sampleMs += now() - t0;
  if (active.length > 0)
    await decodeLoop(
      args,
      active,
      keepRows.length === B ? prefill.present : prefill.present.gather(keepRows),
    );
  return all.map((l) => l.result);
}

/** Decodes the active lanes as one batch until each stops; `cache` row j belongs to active[j]. */
async function decodeLoop(c: Common, start: Lane[], first: KvCache): Promise<void> {
  const { decoder, stats } = c;
  let active = start;
  let cache = first;
  const padded = active.some((l) => l.valid.includes(0));
  while (active.length > 0) {
    let t0 = now();
    const B = active.length;
    const T = cache.length + 1;
    const tokens = active.map((l) => [l.result.tokenIds.at(-1)!]);
    let layout: { mask: BigInt64Array; positions: BigInt64Array } | undefined;
    if (padded) {
      const mask = new BigInt64Array(B * T);
      const positions = new BigInt64Array(B);
      active.forEach((l, b) => {
        for (let j = 0; j < T - 1; j++) mask[b * T + j] = BigInt(l.valid[j]!);
        mask[b * T + T - 1] = 1n;
        positions[b] = BigInt(l.pos);
      });
      layout = { mask, positions };
    }
    const step = await decoder.forward(tokens, cache, true, layout);
    if (stats) {
      stats.decodeSteps++;
      stats.decodeTokens += B;
      stats.decodeMs += now() - t0;
    }
    t0 = now();
    const still: Lane[] = [];
    const kept: number[] = [];
    const rows = await rowsOf(c, step.logits, B);
    active.forEach((lane, j) => {
      lane.valid.push(1);
      lane.pos++;
      if (draw(c, lane, rows, j)) c.retain?.(lane.row, keep(step.present, j, lane));
      else {
        still.push(lane);
        kept.push(j);
      }
    });
    if (stats) stats.sampleMs += now() - t0;
    // Rows that stopped leave the batch: later steps cost only what is still running.
    cache = kept.length === B ? step.present : step.present.gather(kept);
    active = still;
  }
}

/** What one request asks of the decoding: its sampling params and where finished rows' caches go. */
/**
 * One continuation: its one-row cache and the tokens it feeds. `replay`: token segments to run first, each as one
 * forward pass of its own (a prompt, one sampled token, a tool result's delta), that rebuild `past` exactly as
 * the passes that first computed it did (slots graph; the standard graph feeds them with `feed` instead).
 */
export interface EachItem {
  past: KvCache;
  feed: readonly number[];
  row: RowSpec;
  replay?: readonly (readonly number[])[];
}

export interface JobArgs {
  params: SamplingParams;
  retain?: RetainCache;
}

/** The policy's decoding, whichever graph it runs: G rows of one prefix, or one row per item. */
export interface Decoding {
  decodeRows(
    args: JobArgs & { past: KvCache; feed: readonly number[]; rows: readonly RowSpec[] },
  ): Promise<RowResult[]>;
  decodeEach(args: JobArgs & { items: readonly EachItem[] }): Promise<RowResult[]>;
  /** `past` (one row) and `tokens` after it, run as one pass alone and counted as prefill: the longer cache. */
  extend(past: KvCache, tokens: readonly number[]): Promise<KvCache>;
  dispose(): Promise<void>;
}

/**
 * The standard graph's decoding (bundles without the slots graph): each request decodes on its own, its rows
 * batched with each other only (decodeRows, decodeEach above).
 */
export class StandardDecoding implements Decoding {
  constructor(
    private readonly decoder: OnnxDecoder,
    private readonly sampler: Sampler,
    private readonly graph: SamplerGraph | undefined,
    private readonly stops: StopSpec,
    private readonly stats: LoopStats,
  ) {}

  decodeRows(
    a: JobArgs & { past: KvCache; feed: readonly number[]; rows: readonly RowSpec[] },
  ): Promise<RowResult[]> {
    return decodeRows({ ...this.common(), ...a });
  }

  decodeEach(a: JobArgs & { items: readonly EachItem[] }): Promise<RowResult[]> {
    // One prefill of the replayed segments and the feed together: the same tokens, not the same passes.
    const items = a.items.map(({ replay, ...it }) =>
      replay?.length ? { ...it, feed: [...replay.flat(), ...it.feed] } : it,
    );
    return decodeEach({ ...this.common(), ...a, items });
  }

  async extend(past: KvCache, tokens: readonly number[]): Promise<KvCache> {
    const t0 = now();
    const { present } = await this.decoder.forward([tokens], past, true);
    this.stats.prefillTokens += tokens.length;
    this.stats.prefillMs += now() - t0;
    return present;
  }

  async dispose(): Promise<void> {
    await this.decoder.dispose();
  }

  private common() {
    return {
      decoder: this.decoder,
      sampler: this.sampler,
      ...(this.graph ? { graph: this.graph } : {}),
      stops: this.stops,
      stats: this.stats,
    };
  }
}
