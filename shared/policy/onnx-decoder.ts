// One forward pass of the exported decoder through onnxruntime-node, with inputs and outputs named as Optimum and
// transformers.js name them: input_ids, attention_mask, position_ids, past_key_values.N.key|value -> logits,
// present.N.key|value (and the optional num_logits_to_keep, so a prefill computes only the last row of logits).
import { availableParallelism } from 'node:os';
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { KvCache, type KvShape } from './kv-cache.ts';
import { cpuSessionOptions } from './session-options.ts';

export interface DecoderOptions {
  /** ORT intra-op threads; defaults to defaultDecoderThreads() (the cores available). */
  threads?: number;
  /**
   * Whether rows may be padded (attention_mask zeros) and several rows may feed several tokens on top of a cache.
   * The `contrib` graph (GroupQueryAttention) allows neither (GRAPH.md); the standard graph allows both.
   */
  paddedRows?: boolean;
}

/**
 * The decoder's intra-op threads when none are given: every core the process may use. With spin-waiting off
 * (session-options.ts) a second thread no longer stalls a loaded machine: 2 threads were as fast or faster than 1
 * at batch 1 and G = 8 on the 2-core benchmark machine at load average 6-8 (BENCHMARKS.md "Rollout engine"), and
 * a rollout worker that owns its cores gets their parallelism. Pass `threads` to share a machine deliberately.
 */
export function defaultDecoderThreads(): number {
  return availableParallelism();
}

export interface ForwardResult {
  /** [batch, rows, vocab] floats; rows = 1 when only the last position's logits were asked for. */
  logits: Float32Array;
  logitsRows: number;
  present: KvCache;
}

type Ort = typeof import('onnxruntime-node');

export class OnnxDecoder {
  private constructor(
    private readonly ort: Ort,
    private readonly session: InferenceSession,
    readonly kv: KvShape,
    readonly vocabSize: number,
    private readonly hasPositionIds: boolean,
    private readonly hasNumLogitsToKeep: boolean,
    readonly paddedRows: boolean,
  ) {}

  static async load(
    modelPath: string,
    kv: KvShape,
    vocabSize: number,
    opts: DecoderOptions = {},
  ): Promise<OnnxDecoder> {
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(
      modelPath,
      cpuSessionOptions(opts.threads ?? defaultDecoderThreads()),
    );
    const inputs = new Set(session.inputNames);
    const need = ['input_ids', 'attention_mask'];
    for (let i = 0; i < kv.numLayers; i++)
      need.push(`past_key_values.${i}.key`, `past_key_values.${i}.value`);
    const missing = need.filter((n) => !inputs.has(n));
    if (missing.length > 0)
      throw new Error(
        `${modelPath} lacks inputs ${missing.join(', ')} (has ${session.inputNames.join(', ')})`,
      );
    const outputs = new Set(session.outputNames);
    const needOut = ['logits'];
    for (let i = 0; i < kv.numLayers; i++) needOut.push(`present.${i}.key`, `present.${i}.value`);
    const missingOut = needOut.filter((n) => !outputs.has(n));
    if (missingOut.length > 0) throw new Error(`${modelPath} lacks outputs ${missingOut.join(', ')}`);
    const meta = session.inputMetadata.find((m) => m.name === 'past_key_values.0.key');
    if (meta?.isTensor && meta.type !== 'float32')
      throw new Error(`${modelPath} keeps its KV cache in ${meta.type}; the CPU engine runs float32 caches`);
    return new OnnxDecoder(
      ort,
      session,
      kv,
      vocabSize,
      inputs.has('position_ids'),
      inputs.has('num_logits_to_keep'),
      opts.paddedRows ?? true,
    );
  }

  /**
   * Runs `tokens` (batch rows of equal length) on top of `past` (same batch). Without `layout` every row is
   * unpadded and its positions continue from past.length; with it, `mask` ([batch, past + seq], 0 = padding)
   * and `positions` ([batch, seq]) say otherwise. With `lastOnly` the logits are each row's last position's.
   */
  async forward(
    tokens: readonly (readonly number[])[],
    past: KvCache,
    lastOnly: boolean,
    layout?: { mask: BigInt64Array; positions: BigInt64Array },
  ): Promise<ForwardResult> {
    const { ort } = this;
    const batch = tokens.length;
    const seq = tokens[0]?.length ?? 0;
    if (batch !== past.batch)
      throw new Error(`forward: ${batch} rows of tokens but a cache of ${past.batch}`);
    if (seq === 0 || tokens.some((r) => r.length !== seq))
      throw new Error('forward: rows must be non-empty and equal');
    const total = past.length + seq;
    const ids = new BigInt64Array(batch * seq);
    const pos = new BigInt64Array(batch * seq);
    for (let b = 0; b < batch; b++)
      for (let j = 0; j < seq; j++) {
        ids[b * seq + j] = BigInt(tokens[b]![j]!);
        pos[b * seq + j] = BigInt(past.length + j);
      }
    if (layout && (layout.mask.length !== batch * total || layout.positions.length !== batch * seq))
      throw new Error('forward: layout mask/positions do not match the batch');
    if (!this.paddedRows && (layout?.mask.includes(0n) || (batch > 1 && seq > 1 && past.length > 0)))
      throw new Error('forward: this graph takes unpadded rows, and one new token per row on top of a cache');
    const feeds: Record<string, Tensor> = {
      input_ids: new ort.Tensor('int64', ids, [batch, seq]),
      attention_mask: new ort.Tensor('int64', layout?.mask ?? new BigInt64Array(batch * total).fill(1n), [
        batch,
        total,
      ]),
    };
    if (this.hasPositionIds)
      feeds.position_ids = new ort.Tensor('int64', layout?.positions ?? pos, [batch, seq]);
    if (this.hasNumLogitsToKeep) feeds.num_logits_to_keep = new ort.Tensor('int64', [lastOnly ? 1n : 0n], []);
    const { numLayers, numKvHeads, headDim } = this.kv;
    const dims = [batch, numKvHeads, past.length, headDim];
    for (let i = 0; i < numLayers; i++) {
      feeds[`past_key_values.${i}.key`] = new ort.Tensor('float32', past.keys[i]!, dims);
      feeds[`past_key_values.${i}.value`] = new ort.Tensor('float32', past.values[i]!, dims);
    }
    const out = await this.session.run(feeds);
    const logitsT = out.logits!;
    if (logitsT.dims[2] !== this.vocabSize)
      throw new Error(
        `logits have ${logitsT.dims[2]} columns; the manifest says vocabSize ${this.vocabSize}`,
      );
    const rows = logitsT.dims[1]!;
    let logits = logitsT.data as Float32Array;
    let logitsRows = rows;
    if (lastOnly && rows > 1) {
      // No num_logits_to_keep input: keep each row's last position only.
      const V = logitsT.dims[2]!;
      const last = new Float32Array(batch * V);
      for (let b = 0; b < batch; b++)
        last.set(logits.subarray((b * rows + rows - 1) * V, (b * rows + rows) * V), b * V);
      logits = last;
      logitsRows = 1;
    }
    const keys: Float32Array[] = [];
    const values: Float32Array[] = [];
    for (let i = 0; i < numLayers; i++) {
      keys.push(out[`present.${i}.key`]!.data as Float32Array);
      values.push(out[`present.${i}.value`]!.data as Float32Array);
    }
    return { logits, logitsRows, present: new KvCache(this.kv, batch, total, keys, values) };
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
