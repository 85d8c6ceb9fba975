// The engine's log-probs checked against the model itself: one cache-free forward pass over a whole sequence.
import { KvCache } from '#shared/policy/kv-cache';
import type { OnnxDecoder } from '#shared/policy/onnx-decoder';

/** log softmax(logits / T) of every token after `promptLength`, from one cache-free pass over `ids`. */
export async function referenceLogprobs(
  decoder: OnnxDecoder,
  ids: readonly number[],
  promptLength: number,
  T = 1,
): Promise<number[]> {
  const { logits } = await decoder.forward([ids], KvCache.empty(decoder.kv, 1), false);
  const V = decoder.vocabSize;
  const out: number[] = [];
  for (let t = promptLength; t < ids.length; t++) {
    const row = logits.subarray((t - 1) * V, t * V);
    let max = Number.NEGATIVE_INFINITY;
    for (const x of row) max = Math.max(max, x);
    let z = 0;
    for (const x of row) z += Math.exp((x - max) / T);
    out.push((row[ids[t]!]! - max) / T - Math.log(z));
  }
  return out;
}
