// Continuous batching over the slots graph: every request a policy is serving (the G samples of a group start, a
// trajectory's next turn) joins one running batch, decoded one token per row per step, and leaves it when its
// turn ends. A request is prefilled alone (batch 1, its own cache plus the tokens it feeds), its rows draw their
// first token from that one pass, then join the batch at the next step; so concurrent rollouts in one process share
// each decode step instead of taking turns.
//
// A row's logits do not depend on the rows beside it (slot-batch.ts: capacities are multiples of SLOT_CHUNK) and
// each row draws from its own random stream, so a request samples the same tokens however it is batched: batching
// changes the speed, not the run.

import {
  type Decoding,
  type DrawContext,
  draw,
  type EachItem,
  type JobArgs,
  type Lane,
  type LoopStats,
  lanes,
  type RetainCache,
  type RowResult,
  type RowSpec,
  rowsOf,
} from './decode-loop.ts';
import { KvCache } from './kv-cache.ts';
import type { Sampler, SamplingParams } from './sampler.ts';
import type { SamplerGraph } from './sampler-graph.ts';
import { SlotBatch } from './slot-batch.ts';
import type { SlotDecoder } from './slot-decoder.ts';
import type { StopSpec } from './stops.ts';

export interface BatcherOptions {
  /**
   * Rows decoded together at most (default 128); a request waits while its rows would not fit. Past a few dozen
   * rows a step costs about the same per row (the tiny quickstart model: ~0.1 ms a row from 32 rows up), so a
   * larger batch buys little and holds more cache.
   */
  maxRows?: number;
  /** Bytes of batch cache at most (default 1 GiB); a request waits while its rows would not fit. */
  maxCacheBytes?: number;
}

interface Job {
  past: KvCache;
  /** Segments run first, one pass each, onto `past` (EachItem.replay). */
  replay?: readonly (readonly number[])[];
  feed: readonly number[];
  rows: readonly RowSpec[];
  params: SamplingParams;
  /** Row `lane.row` of this job has stopped with this cache. */
  retain?: RetainCache;
  lanes: Lane[];
  open: number;
  resolve(results: RowResult[]): void;
  reject(err: unknown): void;
}

interface Active {
  job: Job;
  lane: Lane;
}

const now = () => performance.now();

export class SlotBatcher implements Decoding {
  private pending: Job[] = [];
  private active: Active[] = [];
  private batch: SlotBatch;
  private loop: Promise<void> | null = null;
  private readonly maxRows: number;
  private readonly maxCacheBytes: number;

  constructor(
    private readonly decoder: SlotDecoder,
    private readonly sampler: Sampler,
    private readonly graph: SamplerGraph | undefined,
    private readonly stops: StopSpec,
    private readonly stats: LoopStats,
    opts: BatcherOptions = {},
  ) {
    this.maxRows = opts.maxRows ?? 128;
    this.batch = new SlotBatch(decoder.kv, this.maxRows);
    this.maxCacheBytes = opts.maxCacheBytes ?? 2 ** 30;
  }

  /** Rows being decoded right now (for tests and metrics). */
  get rowsInFlight(): number {
    return this.active.length;
  }

  decodeRows(
    args: JobArgs & { past: KvCache; feed: readonly number[]; rows: readonly RowSpec[] },
  ): Promise<RowResult[]> {
    if (args.feed.length === 0)
      throw new Error('decodeRows: nothing to feed (the cache already holds every token)');
    if (args.past.batch !== 1) throw new Error('decodeRows: a one-row cache expected');
    return this.submit(args.past, args.feed, args.rows, args.params, args.retain);
  }

  async decodeEach(args: JobArgs & { items: readonly EachItem[] }): Promise<RowResult[]> {
    if (args.items.some((it) => it.feed.length === 0 || it.past.batch !== 1))
      throw new Error('decodeEach: every item needs a one-row cache and at least one new token');
    // Settles only once every item has: a caller may reuse an item's past once the call is over (policy.ts gives
    // taken caches back to the row pool), so no item may still wait for admission when another's failure is thrown.
    const settled = await Promise.allSettled(
      args.items.map((it, k) =>
        this.submit(
          it.past,
          it.feed,
          [it.row],
          args.params,
          args.retain ? (_row, cache) => args.retain!(k, cache) : undefined,
          it.replay,
        ),
      ),
    );
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((r) => (r as PromiseFulfilledResult<RowResult[]>).value[0]!);
  }

  async extend(past: KvCache, tokens: readonly number[]): Promise<KvCache> {
    if (tokens.length === 0 || past.batch !== 1)
      throw new Error('extend: a one-row cache and at least one new token expected');
    const t0 = now();
    const out = await this.feedAlone(past, tokens);
    this.stats.prefillMs += now() - t0;
    return out;
  }

  async dispose(): Promise<void> {
    await this.loop;
    this.batch.release();
    await this.decoder.dispose();
  }

  private submit(
    past: KvCache,
    feed: readonly number[],
    rows: readonly RowSpec[],
    params: SamplingParams,
    retain: RetainCache | undefined,
    replay?: readonly (readonly number[])[],
  ): Promise<RowResult[]> {
    return new Promise((resolve, reject) => {
      this.pending.push({
        past,
        ...(replay?.length ? { replay } : {}),
        feed,
        rows,
        params,
        ...(retain ? { retain } : {}),
        lanes: lanes(rows, params, this.stops),
        open: rows.length,
        resolve,
        reject,
      });
      this.kick();
    });
  }

  /** Starts the loop unless it runs; a request that arrives as the loop ends starts it again. */
  private kick(): void {
    if (this.loop) return;
    this.loop = this.run().finally(() => {
      this.loop = null;
      if (this.pending.length > 0) this.kick();
    });
  }

  private async run(): Promise<void> {
    while (this.pending.length > 0 || this.active.length > 0) {
      while (this.pending.length > 0 && this.fits(this.pending[0]!)) {
        const job = this.pending.shift()!;
        try {
          await this.admit(job);
        } catch (err) {
          this.drop(job, err);
        }
      }
      if (this.active.length === 0) continue;
      try {
        await this.step();
      } catch (err) {
        // A failed step leaves no row's cache trustworthy: every request in the batch fails with the error.
        for (const job of new Set(this.active.map((a) => a.job))) this.drop(job, err);
        this.active = [];
        this.batch = new SlotBatch(this.decoder.kv, this.maxRows);
      }
    }
  }

  private fits(job: Job): boolean {
    const rows = this.batch.batch + job.rows.length;
    return (
      this.batch.batch === 0 || (rows <= this.maxRows && rows * this.batch.rowBytes() <= this.maxCacheBytes)
    );
  }

  private context(params: SamplingParams): DrawContext {
    return {
      decoder: this.decoder,
      sampler: this.sampler,
      ...(this.graph ? { graph: this.graph } : {}),
      params,
    };
  }

  /** Prefills a job alone, draws its rows' first tokens and puts the rows that go on into the batch. */
  private async admit(job: Job): Promise<void> {
    let t0 = now();
    let base = job.past;
    for (const segment of job.replay ?? []) base = await this.feedAlone(base, segment);
    const past = SlotBatch.single(base);
    const out = await this.decoder.forward([job.feed], [base.length], past, true);
    past.release();
    this.stats.prefillTokens += job.feed.length;
    this.stats.prefillMs += now() - t0;
    t0 = now();
    const ctx = this.context(job.params);
    const rows = await rowsOf(ctx, out.logits, 1);
    const stopped = job.lanes.map((lane) => draw(ctx, lane, rows, 0));
    // The joined cache (base plus the fed tokens) as its own arrays only for a row that stops at once and whose
    // cache is kept; a row that goes on is copied into the batch from the pass's outputs directly.
    let full: KvCache | undefined;
    const joined = () => (full ??= appendRow(base, out.newKeys, out.newValues, job.feed.length));
    job.lanes.forEach((lane, i) => {
      if (stopped[i]) this.finish(job, lane, job.retain ? joined() : undefined);
      else {
        this.batch.addJoined(base, out.newKeys, out.newValues, job.feed.length);
        this.active.push({ job, lane });
      }
    });
    this.stats.sampleMs += now() - t0;
  }

  /**
   * `cache` plus `tokens`, run as one pass alone: the same keys and values, bit for bit, as the pass that first
   * ran them (a prefill of the same tokens, or a decode step of one: a row's result does not depend on the
   * batch's capacity or on the rows beside it).
   */
  private async feedAlone(cache: KvCache, tokens: readonly number[]): Promise<KvCache> {
    const view = SlotBatch.single(cache);
    try {
      const out = await this.decoder.forward([tokens], [cache.length], view, true);
      this.stats.prefillTokens += tokens.length;
      return appendRow(cache, out.newKeys, out.newValues, tokens.length);
    } finally {
      view.release();
    }
  }

  /** One decode step of every row in the batch; rows whose turn ends leave it. */
  private async step(): Promise<void> {
    let t0 = now();
    const B = this.active.length;
    const tokens = this.active.map((a) => [a.lane.result.tokenIds.at(-1)!]);
    const out = await this.decoder.forward(tokens, this.batch.lengths, this.batch, true);
    this.batch.append(out.newKeys, out.newValues);
    this.stats.decodeSteps++;
    this.stats.decodeTokens += B;
    this.stats.decodeMs += now() - t0;
    t0 = now();
    const stopped: number[] = [];
    for (const [params, idx] of groupByParams(this.active)) {
      const logits = idx.length === B ? out.logits : pickRows(out.logits, idx, this.decoder.vocabSize);
      const ctx = this.context(params);
      const rows = await rowsOf(ctx, logits, idx.length);
      idx.forEach((b, r) => {
        if (draw(ctx, this.active[b]!.lane, rows, r)) stopped.push(b);
      });
    }
    // Highest first: a removed row's place is taken by the last row, which is then already settled.
    for (const b of stopped.sort((x, y) => y - x)) {
      const { job, lane } = this.active[b]!;
      const cache = job.retain ? this.batch.extract(b) : undefined;
      this.batch.remove(b);
      this.active[b] = this.active[this.active.length - 1]!;
      this.active.pop();
      this.finish(job, lane, cache);
    }
    this.stats.sampleMs += now() - t0;
  }

  private finish(job: Job, lane: Lane, cache: KvCache | undefined): void {
    if (cache) job.retain?.(lane.row, cache);
    if (--job.open === 0) job.resolve(job.lanes.map((l) => l.result));
  }

  private drop(job: Job, err: unknown): void {
    job.open = -1;
    job.reject(err);
  }
}

/** Active rows grouped by their sampling params (one sampling-graph call per group; usually one group). */
function groupByParams(active: readonly Active[]): Map<SamplingParams, number[]> {
  const groups = new Map<SamplingParams, number[]>();
  const byKey = new Map<string, SamplingParams>();
  active.forEach((a, b) => {
    const p = a.job.params;
    const key = `${p.temperature}|${p.topK}|${p.topP}`;
    const rep = byKey.get(key) ?? p;
    byKey.set(key, rep);
    const list = groups.get(rep);
    if (list) list.push(b);
    else groups.set(rep, [b]);
  });
  return groups;
}

function pickRows(logits: Float32Array, rows: readonly number[], V: number): Float32Array {
  const out = new Float32Array(rows.length * V);
  rows.forEach((b, r) => {
    out.set(logits.subarray(b * V, (b + 1) * V), r * V);
  });
  return out;
}

/** A one-row cache of `past` followed by `count` new tokens' keys and values ([1, kvHeads, count, headDim]). */
function appendRow(
  past: KvCache,
  newKeys: readonly Float32Array[],
  newValues: readonly Float32Array[],
  count: number,
): KvCache {
  const { numKvHeads: H, headDim: D } = past.shape;
  const T = past.length;
  const join = (old: Float32Array, fresh: Float32Array): Float32Array => {
    const out = new Float32Array(H * (T + count) * D);
    for (let h = 0; h < H; h++) {
      out.set(old.subarray(h * T * D, (h + 1) * T * D), h * (T + count) * D);
      out.set(fresh.subarray(h * count * D, (h + 1) * count * D), (h * (T + count) + T) * D);
    }
    return out;
  };
  return new KvCache(
    past.shape,
    1,
    T + count,
    past.keys.map((k, i) => join(k, newKeys[i]!)),
    past.values.map((v, i) => join(v, newValues[i]!)),
  );
}
