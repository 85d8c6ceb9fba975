// Sampling's heavy lifting in onnxruntime: a small graph built at load time turns a batch of logits rows into
// each row's max, per-block sums of exp(logits / T - max) and the top-k, with vectorised, threaded kernels. The
// JS side then draws with ~V/128 additions and 128 exps per row instead of V exps, exactly as Sampler.draw does
// (same inverse-CDF order over token ids, same top-k order, same full-softmax log-prob).
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { encodeModel, FLOAT, INT64, type Initializer } from './onnx-writer.ts';
import type { Uniform } from './rng.ts';
import type { Draw, Sampler, SamplingParams } from './sampler.ts';
import { cpuSessionOptions } from './session-options.ts';

const BLOCK = 128;
/** Top-p alone looks for the nucleus among this many tokens, then falls back to the exact full-vocabulary path. */
const NUCLEUS_K = 1024;

/** One forward pass's rows, prepared for drawing. */
export interface PreparedRows {
  logits: Float32Array;
  invT: number;
  k: number;
  /** Per row: max(logits / T). */
  max: Float32Array;
  /** Per row and block: sum of exp(logits / T - max) over the block's tokens. */
  blockMass: Float32Array;
  /** Per row: the k largest logits / T, descending (ties: lower id first), and their ids. */
  topValues: Float32Array;
  topIds: BigInt64Array;
}

type Ort = typeof import('onnxruntime-node');

export class SamplerGraph {
  readonly blocks: number;

  private constructor(
    private readonly ort: Ort,
    private readonly session: InferenceSession,
    readonly vocabSize: number,
  ) {
    this.blocks = Math.ceil(vocabSize / BLOCK);
  }

  /**
   * One intra-op thread by default: the graph is a few milliseconds per step, and a second thread pool beside
   * the decoder's competes with it for the same cores (its spinning workers measurably slowed the next decoder
   * step: 73-76 ms against 55-57 ms with the JS sampler, batch 1, 2 threads on 2 loaded cores).
   */
  static async create(vocabSize: number, threads = 1): Promise<SamplerGraph> {
    const ort = await import('onnxruntime-node');
    const blocks = Math.ceil(vocabSize / BLOCK);
    const pad = blocks * BLOCK - vocabSize;
    const model = encodeModel({
      name: 'toolrl_sampler',
      opset: 18,
      inputs: [
        { name: 'logits', elemType: FLOAT, shape: ['batch', vocabSize] },
        { name: 'inv_temperature', elemType: FLOAT, shape: [1] },
        { name: 'k', elemType: INT64, shape: [1] },
      ],
      outputs: [
        { name: 'max', elemType: FLOAT, shape: ['batch', 1] },
        { name: 'block_mass', elemType: FLOAT, shape: ['batch', blocks] },
        { name: 'top_values', elemType: FLOAT, shape: ['batch', 'k'] },
        { name: 'top_ids', elemType: INT64, shape: ['batch', 'k'] },
      ],
      initializers: [
        { name: 'last_axis', elemType: INT64, dims: [1], values: [-1] },
        { name: 'block_shape', elemType: INT64, dims: [3], values: [0, blocks, BLOCK] },
        ...(pad > 0
          ? [{ name: 'pads', elemType: INT64, dims: [4], values: [0, 0, 0, pad] } as Initializer]
          : []),
      ],
      nodes: [
        { op: 'Mul', inputs: ['logits', 'inv_temperature'], outputs: ['scaled'] },
        {
          op: 'ReduceMax',
          inputs: ['scaled', 'last_axis'],
          outputs: ['max'],
          attributes: [{ name: 'keepdims', i: 1 }],
        },
        { op: 'Sub', inputs: ['scaled', 'max'], outputs: ['shifted'] },
        { op: 'Exp', inputs: ['shifted'], outputs: ['weights'] },
        ...(pad > 0
          ? [
              { op: 'Pad', inputs: ['weights', 'pads'], outputs: ['padded'] },
              { op: 'Reshape', inputs: ['padded', 'block_shape'], outputs: ['blocked'] },
            ]
          : [{ op: 'Reshape', inputs: ['weights', 'block_shape'], outputs: ['blocked'] }]),
        {
          op: 'ReduceSum',
          inputs: ['blocked', 'last_axis'],
          outputs: ['block_mass'],
          attributes: [{ name: 'keepdims', i: 0 }],
        },
        {
          op: 'TopK',
          inputs: ['scaled', 'k'],
          outputs: ['top_values', 'top_ids'],
          attributes: [
            { name: 'axis', i: -1 },
            { name: 'largest', i: 1 },
            { name: 'sorted', i: 1 },
          ],
        },
      ],
    });
    const session = await ort.InferenceSession.create(model, cpuSessionOptions(threads));
    return new SamplerGraph(ort, session, vocabSize);
  }

  /** Runs the graph on `rows` rows of logits (row-major, vocabSize each) under the params' temperature. */
  async prepare(logits: Float32Array, rows: number, s: SamplingParams): Promise<PreparedRows> {
    const V = this.vocabSize;
    const invT = s.temperature === 0 ? 1 : 1 / s.temperature;
    const k = s.topK > 0 && s.topK < V ? s.topK : s.topP < 1 ? Math.min(V, NUCLEUS_K) : 1;
    const { ort } = this;
    const feeds: Record<string, Tensor> = {
      logits: new ort.Tensor('float32', logits.subarray(0, rows * V), [rows, V]),
      inv_temperature: new ort.Tensor('float32', Float32Array.of(invT), [1]),
      k: new ort.Tensor('int64', BigInt64Array.of(BigInt(k)), [1]),
    };
    const out = await this.session.run(feeds);
    return {
      logits,
      invT,
      k,
      max: out.max!.data as Float32Array,
      blockMass: out.block_mass!.data as Float32Array,
      topValues: out.top_values!.data as Float32Array,
      topIds: out.top_ids!.data as BigInt64Array,
    };
  }

  /**
   * Draws row `r`'s token: the same distribution, candidate order and log-prob as Sampler.draw; a nucleus wider
   * than the prepared top-k (flat distributions) falls back to `exact`.
   */
  draw(p: PreparedRows, r: number, s: SamplingParams, rng: Uniform, exact: Sampler): Draw {
    const V = this.vocabSize;
    const nb = this.blocks;
    const row = p.logits.subarray(r * V, (r + 1) * V);
    const m = p.max[r]!;
    let z = 0;
    for (let b = 0; b < nb; b++) z += p.blockMass[r * nb + b]!;
    const logZ = m + Math.log(z);
    const logprobOf = (t: number) => row[t]! * p.invT - logZ;
    const tops = r * p.k;
    if (s.temperature === 0) {
      const t = Number(p.topIds[tops]!);
      return { token: t, logprob: logprobOf(t) };
    }
    if ((s.topK === 0 || s.topK >= V) && s.topP >= 1) {
      // Inverse CDF in token-id order: find the block, then the token inside it.
      let u = rng.next() * z;
      let b = 0;
      while (b < nb - 1 && u >= p.blockMass[r * nb + b]!) u -= p.blockMass[r * nb + b++]!;
      const end = Math.min(V, (b + 1) * BLOCK);
      let last = b * BLOCK;
      for (let t = b * BLOCK; t < end; t++) {
        const w = Math.exp(row[t]! * p.invT - m);
        if (w > 0) last = t;
        u -= w;
        if (u < 0) return { token: t, logprob: logprobOf(t) };
      }
      return { token: last, logprob: logprobOf(last) }; // rounding slack at the block's end
    }
    // Top-k (then top-p inside its mass), or top-p alone inside the prepared top candidates.
    const weights: number[] = [];
    let mass = 0;
    for (let j = 0; j < p.k; j++) {
      const w = Math.exp(p.topValues[tops + j]! - m);
      weights.push(w);
      mass += w;
    }
    const topKOnly = s.topK > 0 && s.topK < V;
    const target = s.topP * (topKOnly ? mass : z);
    let kept = p.k;
    if (s.topP < 1) {
      let cum = 0;
      kept = 0;
      while (kept < p.k && cum < target) cum += weights[kept++]!;
      if (cum < target) return exact.draw(row, s, rng); // the nucleus is wider than the prepared candidates
      mass = cum;
    }
    let u = rng.next() * mass;
    for (let j = 0; j < kept; j++) {
      u -= weights[j]!;
      if (u < 0) {
        const t = Number(p.topIds[tops + j]!);
        return { token: t, logprob: logprobOf(t) };
      }
    }
    const t = Number(p.topIds[tops + kept - 1]!);
    return { token: t, logprob: logprobOf(t) };
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
