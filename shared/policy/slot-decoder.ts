// One forward pass of the bundle's slots graph (`model.slots.onnx`, GRAPH.md "Variant slots") through
// onnxruntime-node: the caller owns the KV cache (SlotBatch) and feeds it as it is; the graph returns the logits
// and only the new tokens' keys and values, so a decode step copies no cache in or out.
import type { InferenceSession, Tensor } from 'onnxruntime-node';
import { DecoderLane } from './decoder-lane.ts';
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

/** A cache whose buffers may be lent to another thread for a pass (a SlotBatch): they come back as new views. */
export interface LendableView extends SlotView {
  keys: Float32Array[];
  values: Float32Array[];
}

/** One pass's inputs: rows of new tokens on `past` (SlotDecoder.forward's arguments). */
export interface SlotPass<V extends SlotView = SlotView> {
  tokens: readonly (readonly number[])[];
  lengths: readonly number[];
  past: V;
  lastOnly: boolean;
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
  /**
   * Intra-op threads of the wider session. When they are at least twice the decoder's own, a running batch kept in
   * two halves (SlotBatcher) decodes them at once instead, one on the decoder's session and one on a session of as
   * many threads on a worker thread (DecoderLane): the same bits again, since a row's result depends neither on the
   * rows beside it nor on which of two like sessions ran it (checked on the lane's first passes, as below).
   */
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
  /** The second lane (SpareCores), started the first time the cores are free; its check as the wider session's. */
  private lane: DecoderLane | undefined;
  private laneLoading: Promise<DecoderLane | undefined> | undefined;
  private laneState: 'unchecked' | 'checked' | 'off' = 'unchecked';

  private constructor(
    private readonly ort: Ort,
    private readonly session: InferenceSession,
    readonly kv: KvShape,
    readonly vocabSize: number,
    private readonly modelPath: string,
    private readonly spare: SpareCores | undefined,
    private readonly threads: number,
  ) {}

  /** Whether this decoder may run two halves of a batch at once (forwardPair); SlotBatcher then keeps two. */
  get pairs(): boolean {
    return this.spare !== undefined && this.spare.threads >= 2 * this.threads;
  }

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
    return new SlotDecoder(ort, session, kv, vocabSize, modelPath, spare, threads);
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
    const feeds = this.feeds({ tokens, lengths, past, lastOnly });
    return this.output(await this.run(feeds, tokens.length * (tokens[0]?.length ?? 0)));
  }

  /**
   * Two passes (two halves of a running batch): at once while the spare cores are free and the second lane is
   * ready (`a` on this decoder's session, `b` on the lane's, each on the decoder's threads), else one after the
   * other as forward() runs them. The same bits either way. While `b` runs on the lane its cache's buffers are
   * there, and come back to `b.past` as new views of the same memory.
   */
  async forwardPair(a: SlotPass, b: SlotPass<LendableView>): Promise<[SlotForward, SlotForward]> {
    const lane = this.laneNow();
    if (!lane) {
      const first = await this.forward(a.tokens, a.lengths, a.past, a.lastOnly);
      return [first, await this.forward(b.tokens, b.lengths, b.past, b.lastOnly)];
    }
    const feedsB = this.feeds(b);
    const moved = new Set<string>();
    for (let i = 0; i < this.kv.numLayers; i++)
      moved.add(`past_key_values.${i}.key`).add(`past_key_values.${i}.value`);
    const restore = (name: string, data: Tensor['data']) => {
      const m = /^past_key_values\.(\d+)\.(key|value)$/.exec(name);
      if (!m) return;
      const whole = new Float32Array((data as Float32Array).buffer);
      (m[2] === 'key' ? b.past.keys : b.past.values)[Number(m[1])] = whole;
    };
    this.spare?.ran?.(true);
    const [outA, outB] = await Promise.all([
      this.session.run(this.feeds(a)),
      lane.run(feedsB, moved, restore).then(
        (o) => o as unknown as InferenceSession.OnnxValueMapType,
        (err: unknown) => {
          this.laneState = 'off'; // a lane whose worker failed is not used again (this pass's batch fails)
          throw err;
        },
      ),
    ]);
    if (this.laneState === 'unchecked') {
      // The lane's first pass runs here too and must agree bit for bit. One pass settles it: the two sessions have
      // the same graph and threads, so they take the same kernels for any number of rows.
      const here = await this.session.run(this.feeds(b));
      if (!Object.keys(here).every((k) => sameBits(here[k]!.data, outB[k]?.data))) {
        this.laneState = 'off';
        this.spare?.differed?.();
        return [this.output(outA), this.output(here)];
      }
      this.laneState = 'checked';
    }
    return [this.output(outA), this.output(outB)];
  }

  /** The lane when a pair may use it now: the spare cores are free and it is started and not found to differ. */
  private laneNow(): DecoderLane | undefined {
    if (!this.pairs || this.laneState === 'off' || !this.spare!.free()) return undefined;
    void this.prepareLane();
    return this.lane;
  }

  /** Starts the second lane now instead of at the first free pair; resolves to whether it runs. */
  prepareLane(): Promise<boolean> {
    if (!this.pairs) return Promise.resolve(false);
    this.laneLoading ??= DecoderLane.start(this.modelPath, cpuSessionOptions(this.threads)).then(
      (l) => (this.lane = l),
      () => {
        this.laneState = 'off'; // the pairs run one after the other on this session: not the run's failure
        return undefined;
      },
    );
    return this.laneLoading.then((l) => l !== undefined);
  }

  private feeds({ tokens, lengths, past, lastOnly }: SlotPass): Record<string, Tensor> {
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
    return feeds;
  }

  private output(out: InferenceSession.OnnxValueMapType): SlotForward {
    const logitsT = out.logits!;
    if (logitsT.dims[2] !== this.vocabSize)
      throw new Error(
        `logits have ${logitsT.dims[2]} columns; the manifest says vocabSize ${this.vocabSize}`,
      );
    const newKeys: Float32Array[] = [];
    const newValues: Float32Array[] = [];
    for (let i = 0; i < this.kv.numLayers; i++) {
      newKeys.push(out[`new_key_values.${i}.key`]!.data as Float32Array);
      newValues.push(out[`new_key_values.${i}.value`]!.data as Float32Array);
    }
    return { logits: logitsT.data as Float32Array, newKeys, newValues };
  }

  async dispose(): Promise<void> {
    const [wide, lane] = await Promise.all([this.wideLoading, this.laneLoading]);
    this.wide = undefined;
    this.lane = undefined;
    await Promise.all([this.session.release(), wide?.release(), lane?.close()]);
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
