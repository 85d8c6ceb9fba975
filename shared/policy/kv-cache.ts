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
}
