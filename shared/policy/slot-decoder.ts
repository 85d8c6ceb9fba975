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

/**
 * Cores the decoder may borrow while nobody else uses them: in an embedded run the learner shares the machine and
 * the decoder keeps half the cores, but while the learner waits for groups (its `waiting` line) the other half is
 * idle. A pass then runs on a second session of the same graph with `threads` intra-op threads. onnxruntime's CPU
 * kernels split a product over its rows and columns, not over the sum inside one output, so the wider session
 * computes the same bits. The decoder checks it: the wider session's first passes run on both sessions and are
 * compared bit for bit (SlotDecoder.run), and a difference turns it off for this decoder (one policy version). So
 * which session ran a pass changes no sampled token, and a deterministic run stays deterministic however its
 * learner's idle spells fall (test/unit/policy/slot-decoder.test.ts).
 */
export interface SpareCores {
  /** Intra-op threads of the wider session. */
  readonly threads: number;
  /** Whether the borrowed cores are free now; asked before every pass. */
  free(): boolean;
  /** Told which session ran each pass (counts for the run's log). */
  ran?(wide: boolean): void;
  /** Told when a checked pass of the wider session differed from the narrow one's (it is then not used again). */
  differed?(): void;
}

/**
 * Token rows (batch x new tokens) of the pass that settles the wider session's check: enough that onnxruntime
 * splits its products across threads (a one-row decode step of a small model may run on one thread anyway).
 */
const CHECK_ROWS = 32;

export class SlotDecoder {
  /** The wider session (SpareCores), built the first time the cores are free; undefined until it is ready. */
  private wide: InferenceSession | undefined;
  private wideLoading: Promise<InferenceSession | undefined> | undefined;
  /** `unchecked` until a pass of CHECK_ROWS rows agrees with the narrow session's (`checked`); `off` if one differs. */
  private wideState: 'unchecked' | 'checked' | 'off' = 'unchecked';

  private constructor(
    private readonly ort: Ort,
    private readonly session: InferenceSession,
    readonly kv: KvShape,
    readonly vocabSize: number,
    private readonly modelPath: string,
    private readonly spare: SpareCores | undefined,
  ) {}

  static async load(
    modelPath: string,
    kv: KvShape,
    vocabSize: number,
    opts: { threads?: number; spare?: SpareCores } = {},
  ): Promise<SlotDecoder> {
    const ort = await import('onnxruntime-node');
    const threads = opts.threads ?? defaultDecoderThreads();
    const session = await ort.InferenceSession.create(modelPath, cpuSessionOptions(threads));
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
    const spare = opts.spare && opts.spare.threads > threads ? opts.spare : undefined;
    return new SlotDecoder(ort, session, kv, vocabSize, modelPath, spare);
  }

  /**
   * The wider session when the next pass may use it: the spare cores are free and it is built and not found to
   * differ. It is built in the background the first time they are free (passes go on meanwhile on the narrow one).
   */
  private wideNow(): InferenceSession | undefined {
    if (!this.spare || this.wideState === 'off' || !this.spare.free()) return undefined;
    void this.prepareSpare();
    return this.wide;
  }

  /** Builds the wider session now instead of at the first free pass; resolves to whether it was built. */
  prepareSpare(): Promise<boolean> {
    const spare = this.spare;
    if (!spare) return Promise.resolve(false);
    this.wideLoading ??= this.ort.InferenceSession.create(
      this.modelPath,
      cpuSessionOptions(spare.threads),
    ).then(
      (s) => (this.wide = s),
      () => {
        this.wideState = 'off'; // the narrow session serves on: failing to build the other is not the run's failure
        return undefined;
      },
    );
    return this.wideLoading.then((s) => s !== undefined);
  }

  /**
   * One pass on the wider session or the narrow one. Until a pass of at least CHECK_ROWS token rows has run on
   * both and agreed bit for bit, a pass the wider session may take runs on both (the narrow one's result is used);
   * a difference turns the wider session off for this decoder.
   */
  private async run(feeds: Record<string, Tensor>, rows: number): Promise<InferenceSession.OnnxValueMapType> {
    const wide = this.wideNow();
    if (wide && this.wideState === 'checked') {
      this.spare?.ran?.(true);
      return wide.run(feeds);
    }
    this.spare?.ran?.(false);
    const a = await this.session.run(feeds);
    if (!wide) return a;
    const b = await wide.run(feeds);
    if (!Object.keys(a).every((k) => sameBits(a[k]!.data, b[k]?.data))) {
      this.wideState = 'off';
      this.spare?.differed?.();
    } else if (rows >= CHECK_ROWS) this.wideState = 'checked';
    return a;
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
    const out = await this.run(feeds, batch * seq);
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
    const wide = await this.wideLoading;
    this.wide = undefined;
    await Promise.all([this.session.release(), wide?.release()]);
  }
}

/** Whether two outputs hold the same bits (floats compared as bytes, so -0 and NaN payloads count). */
function sameBits(a: Tensor['data'], b: Tensor['data'] | undefined): boolean {
  if (!b || !ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.byteLength !== b.byteLength) return false;
  return (
    Buffer.compare(
      Buffer.from(a.buffer, a.byteOffset, a.byteLength),
      Buffer.from(b.buffer, b.byteOffset, b.byteLength),
    ) === 0
  );
}
