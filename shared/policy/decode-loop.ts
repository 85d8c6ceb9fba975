// Group sampling: prefill the shared tokens once, sample every row's first token from that one pass, tile the
// cache over the rows and decode them as one batch; rows that stop leave the batch (their cache can be kept).
import type { TurnStop } from '#shared/schemas/trajectory';
import type { KvCache } from './kv-cache.ts';
import type { OnnxDecoder } from './onnx-decoder.ts';
import { samplingStream } from './rng.ts';
import type { Sampler, SamplingParams } from './sampler.ts';
import { RowStop, type StopSpec } from './stops.ts';

export interface RowSpec {
  sampleIndex: number;
  turn: number;
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

/**
 * Samples rows.length continuations of `past` + `feed` (a one-row cache and the tokens not in it yet).
 * Row r draws from the stream (s.seed, rows[r].sampleIndex, rows[r].turn).
 */
export async function decodeRows(args: {
  decoder: OnnxDecoder;
  sampler: Sampler;
  past: KvCache;
  feed: readonly number[];
  rows: readonly RowSpec[];
  params: SamplingParams;
  stops: StopSpec;
  retain?: RetainCache;
  stats?: LoopStats;
}): Promise<RowResult[]> {
  const { decoder, sampler, feed, rows, params, stops, retain, stats } = args;
  if (feed.length === 0) throw new Error('decodeRows: nothing to feed (the cache already holds every token)');
  const n = rows.length;
  const streams = rows.map((r) => samplingStream(params.seed, r.sampleIndex, r.turn));
  const trackers = rows.map((r) => new RowStop(stops, params.stopOnToolCallEnd, r.budget));
  const results: RowResult[] = rows.map(() => ({ tokenIds: [], logprobs: [], stop: 'length' }));
  const V = decoder.vocabSize;
  const clock = () => performance.now();

  let t0 = clock();
  const prefill = await decoder.forward([feed], args.past, true);
  if (stats) {
    stats.prefillTokens += feed.length;
    stats.prefillMs += clock() - t0;
  }
  // Every row's first token comes from the one prefilled distribution, each with its own stream.
  t0 = clock();
  let active: number[] = [];
  const row0 = prefill.logits.subarray(0, V);
  for (let r = 0; r < n; r++) {
    const d = sampler.draw(row0, params, streams[r]!);
    results[r]!.tokenIds.push(d.token);
    results[r]!.logprobs.push(d.logprob);
    const stop = trackers[r]!.accept(d.token);
    if (stop) {
      results[r]!.stop = stop;
      retain?.(r, prefill.present);
    } else active.push(r);
  }
  if (stats) stats.sampleMs += clock() - t0;
  let cache = active.length > 0 ? prefill.present.gather(active.map(() => 0)) : prefill.present;

  while (active.length > 0) {
    t0 = clock();
    const step = await decoder.forward(
      active.map((r) => [results[r]!.tokenIds.at(-1)!]),
      cache,
      true,
    );
    if (stats) {
      stats.decodeSteps++;
      stats.decodeTokens += active.length;
      stats.decodeMs += clock() - t0;
    }
    t0 = clock();
    const still: number[] = [];
    const keep: number[] = [];
    active.forEach((r, j) => {
      const d = sampler.draw(step.logits.subarray(j * V, (j + 1) * V), params, streams[r]!);
      results[r]!.tokenIds.push(d.token);
      results[r]!.logprobs.push(d.logprob);
      const stop = trackers[r]!.accept(d.token);
      if (stop) {
        results[r]!.stop = stop;
        if (retain) retain(r, step.present.gather([j]));
      } else {
        still.push(r);
        keep.push(j);
      }
    });
    if (stats) stats.sampleMs += clock() - t0;
    // Rows that stopped leave the batch: later steps cost only what is still running.
    cache = keep.length === active.length ? step.present : step.present.gather(keep);
    active = still;
  }
  return results;
}

export const emptyStats = (): LoopStats => ({
  prefillTokens: 0,
  prefillMs: 0,
  decodeSteps: 0,
  decodeTokens: 0,
  decodeMs: 0,
  sampleMs: 0,
});
