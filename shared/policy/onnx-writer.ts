// A minimal ONNX model writer (protobuf wire format) for the small helper graphs the engine builds at run time.
// Hand-written on purpose: it needs five ONNX messages and a handful of fields, and the JS ONNX protobuf packages
// (onnx-proto, onnx-buf) would add a second protobuf runtime for ~80 lines of encoding. Field numbers follow
// onnx/onnx.proto3.

type Bytes = number[];

function varint(out: Bytes, value: number | bigint): void {
  // int64 fields: negative values are their 64-bit two's complement, 10 bytes.
  let v = BigInt.asUintN(64, BigInt(value));
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
}

const key = (out: Bytes, field: number, wire: number) => varint(out, (field << 3) | wire);

function int(out: Bytes, field: number, value: number | bigint): void {
  key(out, field, 0);
  varint(out, value);
}

function bytes(out: Bytes, field: number, data: ArrayLike<number>): void {
  key(out, field, 2);
  varint(out, data.length);
  for (let i = 0; i < data.length; i++) out.push(data[i]!);
}

const str = (out: Bytes, field: number, s: string) => bytes(out, field, new TextEncoder().encode(s));

function message(out: Bytes, field: number, write: (m: Bytes) => void): void {
  const m: Bytes = [];
  write(m);
  bytes(out, field, m);
}

export const FLOAT = 1;
export const INT64 = 7;

export interface ValueInfo {
  name: string;
  elemType: number;
  /** A number is a fixed dimension, a string a symbolic one. */
  shape: (number | string)[];
}

export interface Initializer {
  name: string;
  elemType: typeof FLOAT | typeof INT64;
  dims: number[];
  values: number[];
}

export type Attribute = { name: string } & ({ i: number } | { ints: number[] });

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  attributes?: Attribute[];
}

export interface GraphSpec {
  name: string;
  opset: number;
  inputs: ValueInfo[];
  outputs: ValueInfo[];
  nodes: NodeSpec[];
  initializers: Initializer[];
}

function valueInfo(out: Bytes, field: number, v: ValueInfo): void {
  message(out, field, (vi) => {
    str(vi, 1, v.name);
    message(vi, 2, (type) =>
      message(type, 1, (tensor) => {
        int(tensor, 1, v.elemType);
        message(tensor, 2, (shape) => {
          for (const d of v.shape)
            message(shape, 1, (dim) => (typeof d === 'number' ? int(dim, 1, d) : str(dim, 2, d)));
        });
      }),
    );
  });
}

function initializer(out: Bytes, t: Initializer): void {
  message(out, 5, (m) => {
    for (const d of t.dims) int(m, 1, d);
    int(m, 2, t.elemType);
    str(m, 8, t.name);
    const raw =
      t.elemType === FLOAT
        ? new Uint8Array(Float32Array.from(t.values).buffer)
        : new Uint8Array(BigInt64Array.from(t.values.map(BigInt)).buffer);
    bytes(m, 9, raw);
  });
}

function node(out: Bytes, n: NodeSpec, index: number): void {
  message(out, 1, (m) => {
    for (const i of n.inputs) str(m, 1, i);
    for (const o of n.outputs) str(m, 2, o);
    str(m, 3, `${n.op}_${index}`);
    str(m, 4, n.op);
    for (const a of n.attributes ?? [])
      message(m, 5, (attr) => {
        str(attr, 1, a.name);
        if ('i' in a) {
          int(attr, 3, a.i);
          int(attr, 20, 2); // AttributeType.INT
        } else {
          for (const x of a.ints) int(attr, 8, x);
          int(attr, 20, 7); // AttributeType.INTS
        }
      });
  });
}

/** Serialises a single-graph model (IR version 8, the default ONNX domain at `opset`). */
export function encodeModel(g: GraphSpec): Uint8Array {
  const out: Bytes = [];
  int(out, 1, 8); // ir_version
  str(out, 2, 'toolrl');
  message(out, 7, (graph) => {
    g.nodes.forEach((n, i) => {
      node(graph, n, i);
    });
    str(graph, 2, g.name);
    for (const t of g.initializers) initializer(graph, t);
    for (const v of g.inputs) valueInfo(graph, 11, v);
    for (const v of g.outputs) valueInfo(graph, 12, v);
  });
  message(out, 8, (op) => {
    str(op, 1, '');
    int(op, 2, g.opset);
  });
  return Uint8Array.from(out);
}
