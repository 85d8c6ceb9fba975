// One forward pass of the bundle's slots graph (`model.slots.onnx`, GRAPH.md "Variant slots") through
// onnxruntime-node: the caller owns the KV cache (SlotBatch) and feeds it as it is; the graph returns the logits
// and only the new tokens' keys and values, so a decode step copies no cache in or out.
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import type { KvShape } from './kv-cache.ts';
import { defaultDecoderThreads } from './onnx-decoder.ts';
import { cpuSessionOptions } from './session-options.ts';

export const SLOTS_GRAPH_FILE = 'model.slots.onnx';

/** A cache as the graph reads it: per layer [batch, kvHeads, capacity, headDim] floats (a prefix of each array). */
export interface SlotView {
  readonly batch: number;
  readonly capacity: number;
  readonly keys: readonly Float32Array[];
  readonly values: readonly Float32Array[];
}

export interface SlotForward {
  /** [batch, rows, vocab]; rows = 1 when only the last position's logits were asked for. */
  logits: Float32Array;
  /** Per layer [batch, kvHeads, seq, headDim]: the new tokens' keys (after RoPE) and values. */
  newKeys: Float32Array[];
  newValues: Float32Array[];
}

type Ort = typeof import('onnxruntime-node');

export class SlotDecoder {
  private constructor(
    private readonly ort: Ort,
    private readonly session: InferenceSession,
    readonly kv: KvShape,
    readonly vocabSize: number,
  ) {}

  static async load(
    modelPath: string,
    kv: KvShape,
    vocabSize: number,
    opts: { threads?: number } = {},
  ): Promise<SlotDecoder> {
    const ort = await import('onnxruntime-node');
    const session = await ort.InferenceSession.create(
      modelPath,
      cpuSessionOptions(opts.threads ?? defaultDecoderThreads()),
    );
    const need = ['input_ids', 'past_lengths', 'num_logits_to_keep'];
    const needOut = ['logits'];
    for (let i = 0; i < kv.numLayers; i++) {
      need.push(`past_key_values.${i}.key`, `past_key_values.${i}.value`);
      needOut.push(`new_key_values.${i}.key`, `new_key_values.${i}.value`);
    }
    const missing = [
      ...need.filter((n) => !session.inputNames.includes(n)),
      ...needOut.filter((n) => !session.outputNames.includes(n)),
    ];
    if (missing.length > 0) {
      await session.release();
      throw new Error(`${modelPath} is not a slots graph: it lacks ${missing.join(', ')}`);
    }
    return new SlotDecoder(ort, session, kv, vocabSize);
  }

  /**
   * Runs `tokens` (batch rows of equal length) on top of `past`: row b's first `lengths[b]` slots are its cache
   * (`lengths[b] <= past.capacity`), the rest are ignored. With `lastOnly` the logits are each row's last
   * position's.
   */
  async forward(
    tokens: readonly (readonly number[])[],
    lengths: readonly number[],
    past: SlotView,
    lastOnly: boolean,
  ): Promise<SlotForward> {
    const { ort } = this;
    const batch = tokens.length;
    const seq = tokens[0]?.length ?? 0;
    if (batch !== past.batch || lengths.length !== batch)
      throw new Error(
        `forward: ${batch} rows of tokens, ${lengths.length} lengths, a cache of ${past.batch}`,
      );
    if (seq === 0 || tokens.some((r) => r.length !== seq))
      throw new Error('forward: rows must be non-empty and equal');
    if (past.capacity < 1 || lengths.some((l) => l < 0 || l > past.capacity))
      throw new Error(`forward: lengths must fit a capacity of ${past.capacity} (>= 1)`);
    const ids = new BigInt64Array(batch * seq);
    for (let b = 0; b < batch; b++) for (let j = 0; j < seq; j++) ids[b * seq + j] = BigInt(tokens[b]![j]!);
    const feeds: Record<string, Tensor> = {
      input_ids: new ort.Tensor('int64', ids, [batch, seq]),
      past_lengths: new ort.Tensor('int64', BigInt64Array.from(lengths, BigInt), [batch]),
      num_logits_to_keep: new ort.Tensor('int64', [lastOnly ? 1n : 0n], []),
    };
    const { numLayers, numKvHeads, headDim } = this.kv;
    const size = batch * numKvHeads * past.capacity * headDim;
    const dims = [batch, numKvHeads, past.capacity, headDim];
    for (let i = 0; i < numLayers; i++) {
      feeds[`past_key_values.${i}.key`] = new ort.Tensor('float32', past.keys[i]!.subarray(0, size), dims);
      feeds[`past_key_values.${i}.value`] = new ort.Tensor(
        'float32',
        past.values[i]!.subarray(0, size),
        dims,
      );
    }
    const out = await this.session.run(feeds);
    const logitsT = out.logits!;
    if (logitsT.dims[2] !== this.vocabSize)
      throw new Error(
        `logits have ${logitsT.dims[2]} columns; the manifest says vocabSize ${this.vocabSize}`,
      );
    const newKeys: Float32Array[] = [];
    const newValues: Float32Array[] = [];
    for (let i = 0; i < numLayers; i++) {
      newKeys.push(out[`new_key_values.${i}.key`]!.data as Float32Array);
      newValues.push(out[`new_key_values.${i}.value`]!.data as Float32Array);
    }
    return { logits: logitsT.data as Float32Array, newKeys, newValues };
  }

  async dispose(): Promise<void> {
    await this.session.release();
  }
}
