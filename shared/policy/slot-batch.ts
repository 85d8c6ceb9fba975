// The running batch's KV cache for the slots graph: per layer one key and one value buffer laid out
// [rows, kvHeads, capacity, headDim], the active rows packed at the front (row b's block is contiguous), each with
// its own length. A decode step reads it in place and appends each row's new key/value at the row's length; a row
// joins by copying its one-row cache into the next free block and leaves by the last block moving into its place.
//
// The capacity is always a multiple of SLOT_CHUNK. The slots graph's result for a row then does not depend on the
// capacity (its ignored slots add exact zeros, and every kernel over them is laid out alike for any multiple of
// the chunk), so it does not depend on which rows share the batch either: a row samples the same tokens however
// the requests in flight are batched (test/unit/policy/batcher.test.ts checks it bit for bit).
import { KvCache, type KvShape, rowArray } from './kv-cache.ts';
import type { SlotView } from './slot-decoder.ts';

export const SLOT_CHUNK = 64;

const NO_TOKENS = new Float32Array(0);

/**
 * Buffers given back by batches that are done (a policy version's batch; the next version's starts from nothing),
 * reused by the next one instead of allocating and zero-filling them again: ~60 versions a quickstart run, each
 * growing its batch to ~70 MB of cache. The values left in them are finite keys and values, which the slots graph
 * ignores past each row's length. Kept to POOL_BYTES.
 */
const pool: Float32Array[] = [];
const POOL_BYTES = 512 * 2 ** 20;

function takeBuffer(floats: number): Float32Array {
  const i = pool.findIndex((a) => a.length >= floats); // the pool is sorted by size: the smallest that fits
  return i >= 0 ? pool.splice(i, 1)[0]! : new Float32Array(floats);
}

function giveBuffer(a: Float32Array): void {
  pool.push(a);
  pool.sort((x, y) => x.length - y.length);
  let bytes = pool.reduce((n, x) => n + x.byteLength, 0);
  while (bytes > POOL_BYTES) bytes -= pool.shift()!.byteLength;
}

/** The smallest multiple of SLOT_CHUNK that holds `length` tokens (at least one chunk). */
export const slotCapacity = (length: number): number =>
  Math.max(1, Math.ceil(length / SLOT_CHUNK)) * SLOT_CHUNK;

export class SlotBatch implements SlotView {
  keys: Float32Array[] = [];
  values: Float32Array[] = [];
  /** Active rows (the first `batch` blocks). */
  batch = 0;
  capacity = SLOT_CHUNK;
  /** Tokens held by each active row. */
  readonly lengths: number[] = [];
  private rowsAllocated = 0;

  constructor(
    readonly shape: KvShape,
    /** Rows this batch will hold at most: growing rows doubles up to this, never past it. */
    private readonly maxRows = Number.POSITIVE_INFINITY,
  ) {}

  /** Bytes one row needs at `capacity` (keys and values of every layer). */
  rowBytes(capacity = this.capacity): number {
    const { numLayers, numKvHeads, headDim } = this.shape;
    return 2 * numLayers * numKvHeads * capacity * headDim * 4;
  }

  /** A one-row cache of `capacity` slots holding `cache` (the past of a prefill). */
  static single(cache: KvCache, capacity = slotCapacity(cache.length)): SlotBatch {
    const b = new SlotBatch(cache.shape);
    b.capacity = capacity;
    b.add(cache);
    return b;
  }

  /** Adds a row holding `cache` (one row); returns its index. */
  add(cache: KvCache): number {
    const none = cache.keys.map(() => NO_TOKENS);
    return this.addJoined(cache, none, none, 0);
  }

  /**
   * Adds a row holding `past` (one row) followed by `count` new tokens' keys and values (per layer [1, kvHeads,
   * count, headDim], as a prefill pass returns them); returns its index. The same row as `add` of the joined cache,
   * without building that cache first: a prefill's joined cache was a fresh ~10 MB of arrays for SmolLM2, garbage as
   * soon as it was copied in, and such buffers are what kept V8's collector busy (BENCHMARKS.md, "Inside the
   * rollouts").
   */
  addJoined(
    past: KvCache,
    newKeys: readonly Float32Array[],
    newValues: readonly Float32Array[],
    count: number,
  ): number {
    if (past.batch !== 1) throw new Error('SlotBatch.add: a one-row cache expected');
    const T = past.length;
    this.reserve(this.batch + 1, T + count + 1);
    const b = this.batch++;
    this.lengths.push(T + count);
    const { numLayers, numKvHeads: H, headDim: D } = this.shape;
    const C = this.capacity;
    for (let i = 0; i < numLayers; i++)
      for (let h = 0; h < H; h++) {
        const at = (b * H + h) * C * D;
        this.keys[i]!.set(past.keys[i]!.subarray(h * T * D, (h + 1) * T * D), at);
        this.values[i]!.set(past.values[i]!.subarray(h * T * D, (h + 1) * T * D), at);
        this.keys[i]!.set(newKeys[i]!.subarray(h * count * D, (h + 1) * count * D), at + T * D);
        this.values[i]!.set(newValues[i]!.subarray(h * count * D, (h + 1) * count * D), at + T * D);
      }
    return b;
  }

  /** Writes each row's one new key/value (per layer [batch, kvHeads, 1, headDim]) at its length. */
  append(newKeys: readonly Float32Array[], newValues: readonly Float32Array[]): void {
    this.reserve(this.batch, Math.max(...this.lengths) + 1);
    const { numLayers, numKvHeads: H, headDim: D } = this.shape;
    const C = this.capacity;
    for (let i = 0; i < numLayers; i++) {
      const k = this.keys[i]!;
      const v = this.values[i]!;
      const nk = newKeys[i]!;
      const nv = newValues[i]!;
      for (let b = 0; b < this.batch; b++)
        for (let h = 0; h < H; h++) {
          const from = (b * H + h) * D;
          const at = ((b * H + h) * C + this.lengths[b]!) * D;
          // A plain loop: D floats are too few to be worth a subarray view each.
          for (let d = 0; d < D; d++) {
            k[at + d] = nk[from + d]!;
            v[at + d] = nv[from + d]!;
          }
        }
    }
    for (let b = 0; b < this.batch; b++) this.lengths[b]!++;
  }

  /**
   * Row b as a one-row cache of its tokens, in arrays from the row pool (kv-cache.ts rowArray; give them back with
   * recycleRow once nobody reads the cache).
   */
  extract(b: number): KvCache {
    const { numKvHeads: H, headDim: D } = this.shape;
    const C = this.capacity;
    const T = this.lengths[b]!;
    const pick = (src: Float32Array): Float32Array => {
      const out = rowArray(H * slotCapacity(T) * D, H * T * D);
      for (let h = 0; h < H; h++) {
        const at = (b * H + h) * C * D;
        out.set(src.subarray(at, at + T * D), h * T * D);
      }
      return out;
    };
    return new KvCache(this.shape, 1, T, this.keys.map(pick), this.values.map(pick));
  }

  /** Gives the buffers back for the next batch to reuse; the batch is empty afterwards. */
  release(): void {
    for (const a of [...this.keys, ...this.values]) giveBuffer(a);
    this.keys = [];
    this.values = [];
    this.lengths.length = 0;
    this.batch = 0;
    this.rowsAllocated = 0;
  }

  /** Removes row b: the last row moves into its place (returns the index it moved from, or -1). */
  remove(b: number): number {
    const last = this.batch - 1;
    if (b < 0 || b > last) throw new RangeError(`row ${b} of a batch of ${this.batch}`);
    if (b !== last) {
      // Each head's used keys and values only: the rest of its block is ignored past the row's length (its old
      // values stay there, finite, as a reused buffer's do), and a long batch's capacity can be several times that.
      const { numKvHeads: H, headDim: D } = this.shape;
      const C = this.capacity;
      const used = this.lengths[last]! * D;
      for (const a of [...this.keys, ...this.values])
        for (let h = 0; h < H; h++) {
          const from = (last * H + h) * C * D;
          a.copyWithin((b * H + h) * C * D, from, from + used);
        }
      this.lengths[b] = this.lengths[last]!;
    }
    this.lengths.pop();
    this.batch--;
    return b !== last ? last : -1;
  }

  /**
   * Room for `rows` rows of `length` tokens: grows the row count (doubling) or the capacity (re-laid out, with a
   * quarter more room so a growing batch is not re-laid out every chunk). The capacity never shrinks: buffers are
   * reused from one batch to the next, and any multiple of the chunk gives the same results.
   */
  private reserve(rows: number, length: number): void {
    const capacity = length > this.capacity ? slotCapacity(Math.ceil(length * 1.25)) : this.capacity;
    if (rows <= this.rowsAllocated && capacity === this.capacity) return;
    const grown =
      rows > this.rowsAllocated ? Math.min(2 * this.rowsAllocated, this.maxRows) : this.rowsAllocated;
    const allocate = Math.max(rows, grown, 1);
    const { numLayers, numKvHeads: H, headDim: D } = this.shape;
    const oldC = this.capacity;
    const relayout = (src: Float32Array | undefined): Float32Array => {
      const out = takeBuffer(allocate * H * capacity * D);
      if (!src) return out;
      if (capacity === oldC) out.set(src.subarray(0, this.batch * H * oldC * D));
      else
        for (let b = 0; b < this.batch; b++)
          for (let h = 0; h < H; h++) {
            const from = (b * H + h) * oldC * D;
            out.set(src.subarray(from, from + this.lengths[b]! * D), (b * H + h) * capacity * D);
          }
      giveBuffer(src);
      return out;
    };
    this.keys = Array.from({ length: numLayers }, (_, i) => relayout(this.keys[i]));
    this.values = Array.from({ length: numLayers }, (_, i) => relayout(this.values[i]));
    this.capacity = capacity;
    this.rowsAllocated = allocate;
  }
}
