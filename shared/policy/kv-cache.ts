// The KV cache between forward passes: per layer one key and one value array laid out [batch, kvHeads, length,
// headDim] (the Optimum / transformers.js `past_key_values.N.key|value` layout), so each row is one contiguous block.

export interface KvShape {
  numLayers: number;
  numKvHeads: number;
  headDim: number;
}

export class KvCache {
  constructor(
    readonly shape: KvShape,
    readonly batch: number,
    readonly length: number,
    /** numLayers arrays each for keys and values, batch * kvHeads * length * headDim floats. */
    readonly keys: Float32Array[],
    readonly values: Float32Array[],
  ) {}

  static empty(shape: KvShape, batch: number): KvCache {
    const none = () => Array.from({ length: shape.numLayers }, () => new Float32Array(0));
    return new KvCache(shape, batch, 0, none(), none());
  }

  /** Floats in one row of one layer's keys. */
  get rowSize(): number {
    return this.shape.numKvHeads * this.length * this.shape.headDim;
  }

  /** Memory held, in bytes. */
  get bytes(): number {
    return 2 * this.shape.numLayers * this.batch * this.rowSize * 4;
  }

  /** A cache whose row i is this cache's row rows[i] (repeats allowed: tiling one prefilled prompt over G rows). */
  gather(rows: readonly number[]): KvCache {
    for (const r of rows)
      if (r < 0 || r >= this.batch) throw new RangeError(`row ${r} of a batch of ${this.batch}`);
    const size = this.rowSize;
    const pick = (src: Float32Array): Float32Array => {
      const out = new Float32Array(rows.length * size);
      rows.forEach((r, i) => {
        out.set(src.subarray(r * size, (r + 1) * size), i * size);
      });
      return out;
    };
    return new KvCache(this.shape, rows.length, this.length, this.keys.map(pick), this.values.map(pick));
  }

  /** Row j as a one-row cache of only the columns where valid[column] is 1 (padding dropped). */
  compactRow(j: number, valid: readonly number[]): KvCache {
    if (valid.length !== this.length)
      throw new Error(`compactRow: ${valid.length} flags for ${this.length} columns`);
    const cols: number[] = [];
    valid.forEach((v, c) => {
      if (v === 1) cols.push(c);
    });
    const { numKvHeads: H, headDim: D } = this.shape;
    const pick = (src: Float32Array): Float32Array => {
      const out = new Float32Array(H * cols.length * D);
      for (let h = 0; h < H; h++) {
        const base = (j * H + h) * this.length * D;
        cols.forEach((c, k) => {
          out.set(src.subarray(base + c * D, base + (c + 1) * D), (h * cols.length + k) * D);
        });
      }
      return out;
    };
    return new KvCache(this.shape, 1, cols.length, this.keys.map(pick), this.values.map(pick));
  }

  /** One batch of the given one-row caches, each right-aligned in `width` columns (left padding is zeros). */
  static padLeft(rows: readonly KvCache[], width: number): KvCache {
    const shape = rows[0]!.shape;
    const { numLayers, numKvHeads: H, headDim: D } = shape;
    for (const r of rows)
      if (r.batch !== 1 || r.length > width)
        throw new Error(`padLeft: rows must be one-row caches of <= ${width}`);
    const build = (layer: number, which: 'keys' | 'values'): Float32Array => {
      const out = new Float32Array(rows.length * H * width * D);
      rows.forEach((r, b) => {
        const src = r[which][layer]!;
        const pad = width - r.length;
        for (let h = 0; h < H; h++)
          out.set(src.subarray(h * r.length * D, (h + 1) * r.length * D), ((b * H + h) * width + pad) * D);
      });
      return out;
    };
    const layers = Array.from({ length: numLayers }, (_, i) => i);
    return new KvCache(
      shape,
      rows.length,
      width,
      layers.map((i) => build(i, 'keys')),
      layers.map((i) => build(i, 'values')),
    );
  }
}

/**
 * Arrays for one-row caches that live only between a row's turn and its trajectory's next (SlotBatch.extract puts
 * them in the CacheStore; the next turn's admission copies them into its batch, or the trajectory ends). Each was a
 * fresh ~12 MB for SmolLM2 whose only fate was the garbage collector, and such buffers kept V8 collecting the whole
 * heap several times a second (BENCHMARKS.md, "Inside the rollouts"). Arrays are handed out by size class (`floats`,
 * which callers round up so sizes repeat) and given back with `recycleRow`; only arrays handed out here are taken
 * back, each once. Bounded by boundRowPool.
 */
const rowPool = new Map<number, Float32Array[]>();
/** Buffers handed out by rowArray; `inPool` holds those now waiting in the pool (so none is given back twice). */
const fromPool = new WeakSet<ArrayBuffer>();
const inPool = new WeakSet<ArrayBuffer>();
const ROW_POOL_MAX_BYTES = 512 * 2 ** 20;
/** The pool's bound: half the largest kept-cache budget of this process's stores (boundRowPool), at most 512 MiB. */
let rowPoolLimit = 0;
let rowPoolBytes = 0;

/**
 * Lets the pool hold up to half of `cacheBudgetBytes` (a CacheStore's budget; the largest one wins), at most 512 MiB,
 * so a process told to keep less cache (TOOLRL_KV_CACHE_MB) also pools less.
 */
export function boundRowPool(cacheBudgetBytes: number): void {
  rowPoolLimit = Math.max(rowPoolLimit, Math.min(ROW_POOL_MAX_BYTES, Math.floor(cacheBudgetBytes / 2)));
}

/** An array of at least `used` floats from a buffer of `floats` (a size class), its first `used` floats a view. */
export function rowArray(floats: number, used: number): Float32Array {
  const a = rowPool.get(floats)?.pop();
  if (a) {
    rowPoolBytes -= a.byteLength;
    inPool.delete(a.buffer as ArrayBuffer);
    return a.subarray(0, used);
  }
  const fresh = new Float32Array(floats);
  fromPool.add(fresh.buffer);
  return fresh.subarray(0, used);
}

/**
 * Gives back the arrays of a cache nobody will read again (one kept between turns and now consumed or dropped);
 * arrays rowArray did not hand out are left to the collector.
 */
export function recycleRow(cache: KvCache): void {
  for (const a of [...cache.keys, ...cache.values]) {
    const buf = a.buffer as ArrayBuffer;
    if (!fromPool.has(buf) || inPool.has(buf)) continue;
    if (rowPoolBytes + buf.byteLength > rowPoolLimit) continue;
    const whole = new Float32Array(buf);
    const list = rowPool.get(whole.length) ?? [];
    rowPool.set(whole.length, list);
    list.push(whole);
    inPool.add(buf);
    rowPoolBytes += buf.byteLength;
  }
}
