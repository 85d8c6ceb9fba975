// Draws one token from a row of logits: temperature, top-k, top-p, and the token's log-prob under the full
// softmax(logits / temperature), which is what the learner recomputes (top-k/top-p only narrow the draw).
import type { RolloutConfig } from '#shared/schemas/config/rollout';
import type { GroupRef } from '#shared/schemas/messages/group-ref';
import type { Uniform } from './rng.ts';

export interface SamplingParams {
  /** Softmax temperature; 0 samples greedily (and records the log-prob at temperature 1). */
  temperature: number;
  /** Nucleus mass in (0, 1]; 1 disables top-p. */
  topP: number;
  /** Keep only the k most likely tokens; 0 disables top-k. */
  topK: number;
  /** Per-turn token budget. */
  maxNewTokens: number;
  seed: number;
  /** Stop a turn at the end of a tool call (`</tool_call>`) as well as at EOS. */
  stopOnToolCallEnd: boolean;
  /** Budget of generated + appended tokens after the prompt over the whole trajectory (verl's max_response_length). */
  maxTotalResponseTokens?: number;
  /**
   * Prefill a prompt's head (its system messages and tool schemas) once per policy version and start every prompt
   * with that head from its cache (`rollout.enable_prefix_caching`, prompt-head.ts).
   */
  prefixCache?: boolean;
}

export const DEFAULT_SAMPLING: SamplingParams = {
  temperature: 1,
  topP: 1,
  topK: 0,
  maxNewTokens: 256,
  seed: 0,
  stopOnToolCallEnd: true,
};

/**
 * The engine's sampling for a group, from the run config's `rollout:` block (verl's names): train groups sample
 * as `rollout` says, validation groups as `rollout.val_kwargs` says (greedy by default, as verl validates).
 */
export function samplingParams(
  r: RolloutConfig,
  seed: number,
  split: GroupRef['split'] = 'train',
): SamplingParams {
  const s = split === 'val' ? r.val_kwargs : r;
  return {
    temperature: s.temperature,
    topP: s.top_p,
    topK: s.top_k,
    maxNewTokens: r.max_new_tokens,
    seed,
    stopOnToolCallEnd: true,
    maxTotalResponseTokens: r.multi_turn.max_total_response_length,
    ...(r.enable_prefix_caching ? { prefixCache: true } : {}),
  };
}

/** Checks sampling parameters once, before any work, with a message that names the bad field. */
export function checkSamplingParams(s: SamplingParams): void {
  const bad = (msg: string): never => {
    throw new RangeError(`sampling params: ${msg}`);
  };
  if (!(Number.isFinite(s.temperature) && s.temperature >= 0))
    bad(`temperature must be >= 0, got ${s.temperature}`);
  if (!(s.topP > 0 && s.topP <= 1)) bad(`topP must be in (0, 1], got ${s.topP}`);
  if (!(Number.isInteger(s.topK) && s.topK >= 0)) bad(`topK must be an integer >= 0, got ${s.topK}`);
  if (!(Number.isInteger(s.maxNewTokens) && s.maxNewTokens >= 1))
    bad(`maxNewTokens must be an integer >= 1, got ${s.maxNewTokens}`);
  if (!Number.isInteger(s.seed)) bad(`seed must be an integer, got ${s.seed}`);
  if (
    s.maxTotalResponseTokens !== undefined &&
    !(Number.isInteger(s.maxTotalResponseTokens) && s.maxTotalResponseTokens >= 1)
  )
    bad(`maxTotalResponseTokens must be an integer >= 1, got ${s.maxTotalResponseTokens}`);
}

export interface Draw {
  token: number;
  /** log softmax(logits / T)[token] (T = 1 when greedy). */
  logprob: number;
}

/**
 * Reusable scratch for one vocabulary size, so a decode step allocates nothing. Not shared between concurrent
 * draws (the engine draws rows one after another).
 */
export class Sampler {
  private readonly weights: Float64Array;
  private readonly heap: Int32Array;

  constructor(readonly vocabSize: number) {
    this.weights = new Float64Array(vocabSize);
    this.heap = new Int32Array(vocabSize);
  }

  /** Draws from `logits` (length >= vocabSize; extra padded columns are ignored). */
  draw(logits: Float32Array, s: SamplingParams, rng: Uniform): Draw {
    const V = this.vocabSize;
    const greedy = s.temperature === 0;
    const invT = greedy ? 1 : 1 / s.temperature;
    let max = Number.NEGATIVE_INFINITY;
    let argmax = 0;
    for (let i = 0; i < V; i++) {
      const l = logits[i]!;
      if (l > max) {
        max = l;
        argmax = i;
      }
    }
    if (!Number.isFinite(max))
      throw new Error(`logits row has no finite maximum (${max}); the model produced NaN/Inf`);
    // w_i = exp((l_i - max) / T), the unnormalised probabilities; Z = sum w_i. Summed in float64.
    const w = this.weights;
    let z = 0;
    for (let i = 0; i < V; i++) {
      const e = Math.exp((logits[i]! - max) * invT);
      w[i] = e;
      z += e;
    }
    const logZ = Math.log(z);
    const logprobOf = (t: number): number => (logits[t]! - max) * invT - logZ;
    if (greedy) return { token: argmax, logprob: logprobOf(argmax) };

    if ((s.topK === 0 || s.topK >= V) && s.topP >= 1) {
      const token = this.walk(w, V, rng.next() * z);
      return { token, logprob: logprobOf(token) };
    }
    let cands: Int32Array;
    let kept: number;
    let mass = 0;
    if (s.topK > 0 && s.topK < V) {
      const [top, k] = this.topK(w, s.topK);
      cands = top;
      kept = k;
      for (let j = 0; j < k; j++) mass += w[top[j]!]!;
      if (s.topP < 1) {
        // Top-p after top-k (HF's warper order): the nucleus is taken inside the top-k set's own mass.
        const target = s.topP * mass;
        let cum = 0;
        kept = 0;
        while (kept < k) {
          cum += w[top[kept]!]!;
          kept++;
          if (cum >= target) break;
        }
        mass = cum;
      }
    } else {
      const [nuc, m] = this.nucleus(w, s.topP * z);
      cands = nuc;
      kept = m;
      for (let j = 0; j < m; j++) mass += w[nuc[j]!]!;
    }
    let u = rng.next() * mass;
    for (let j = 0; j < kept; j++) {
      const t = cands[j]!;
      u -= w[t]!;
      if (u < 0) return { token: t, logprob: logprobOf(t) };
    }
    const last = cands[kept - 1]!; // u landed on the rounding slack at the end
    return { token: last, logprob: logprobOf(last) };
  }

  private walk(w: Float64Array, n: number, u: number): number {
    let last = 0;
    for (let i = 0; i < n; i++) {
      const x = w[i]!;
      if (x > 0) last = i;
      u -= x;
      if (u < 0) return i;
    }
    return last;
  }

  /** The k heaviest token ids, heaviest first: a size-k min-heap over the vocabulary, O(V log k), then a sort of k. */
  private topK(w: Float64Array, k: number): [Int32Array, number] {
    const h = this.heap;
    const less = (a: number, b: number): boolean => w[a]! < w[b]! || (w[a] === w[b] && a > b);
    const siftDown = (i: number, n: number): void => {
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) return;
        let m = l;
        if (l + 1 < n && less(h[l + 1]!, h[l]!)) m = l + 1;
        if (!less(h[m]!, h[i]!)) return;
        const t = h[i]!;
        h[i] = h[m]!;
        h[m] = t;
        i = m;
      }
    };
    for (let i = 0; i < k; i++) h[i] = i;
    for (let i = (k >> 1) - 1; i >= 0; i--) siftDown(i, k);
    for (let t = k; t < w.length; t++) {
      if (less(h[0]!, t)) {
        h[0] = t;
        siftDown(0, k);
      }
    }
    const out = h.subarray(0, k);
    out.sort((a, b) => w[b]! - w[a]! || a - b);
    return [out, k];
  }

  /**
   * The smallest set of heaviest tokens whose mass reaches `target`, heaviest first: heapify the whole vocabulary
   * (O(V)) and pop until the mass is reached (O(m log V) for a nucleus of m tokens), never a full sort.
   */
  private nucleus(w: Float64Array, target: number): [Int32Array, number] {
    const h = this.heap;
    const n0 = w.length;
    const more = (a: number, b: number): boolean => w[a]! > w[b]! || (w[a] === w[b] && a < b);
    const siftDown = (i: number, n: number): void => {
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) return;
        let m = l;
        if (l + 1 < n && more(h[l + 1]!, h[l]!)) m = l + 1;
        if (!more(h[m]!, h[i]!)) return;
        const t = h[i]!;
        h[i] = h[m]!;
        h[m] = t;
        i = m;
      }
    };
    for (let i = 0; i < n0; i++) h[i] = i;
    for (let i = (n0 >> 1) - 1; i >= 0; i--) siftDown(i, n0);
    // Popped tokens are parked at the end of the array, so the result lies reversed in h[n..n0).
    let n = n0;
    let cum = 0;
    while (n > 0 && cum < target) {
      const top = h[0]!;
      cum += w[top]!;
      n--;
      h[0] = h[n]!;
      h[n] = top;
      siftDown(0, n);
    }
    const out = h.subarray(n, n0);
    out.reverse();
    return [out, n0 - n];
  }
}
