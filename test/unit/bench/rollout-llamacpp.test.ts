// bench/rollout's llama.cpp reference without llama.cpp itself: which GGUF type each bundle is compared with, the
// GGUF the writer makes from the tiny Hugging Face model (read back with llama.cpp's own gguf reader, values checked
// against the safetensors), and the llama.cpp table's per-round ratios.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Measurement } from '../../../bench/rollout/child.ts';
import { ensureGgufPython, ggufOf, ggufTypeFor } from '../../../bench/rollout/llamacpp.ts';
import { type Row, renderTables } from '../../../bench/rollout/report.ts';
import { REPO_ROOT, tinyBundle } from '../../../bench/support/tiny-model.ts';

const run = promisify(execFile);

describe('ggufTypeFor', () => {
  it('compares int4 with Q4_0 (any block size), int8 with Q8_0 and fp32 with F32', () => {
    expect(ggufTypeFor('int4')).toBe('q4_0');
    expect(ggufTypeFor('int4 (block 128)')).toBe('q4_0');
    expect(ggufTypeFor('int8')).toBe('q8_0');
    expect(ggufTypeFor('fp32')).toBe('f32');
    expect(() => ggufTypeFor('bf16')).toThrow(/no GGUF type for bundle bf16/);
  });
});

// Reads a GGUF with gguf's reader and compares every tensor, dequantised, with the model's safetensors.
const CHECK = `
import json, sys
import gguf, numpy as np
from safetensors.numpy import load_file
path, st_path = sys.argv[1], sys.argv[2]
r = gguf.GGUFReader(path)
def field(k):
    f = r.fields[k]
    v = f.parts[f.data[0]]
    return bytes(v).decode() if f.types[0] == gguf.GGUFValueType.STRING else v.tolist()[0]
hf = load_file(st_path)
names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, 2)
errs = {}
for name, w in hf.items():
    if name == "lm_head.weight":
        continue
    t = next(t for t in r.tensors if t.name == names.get_name(name, try_suffixes=(".weight", ".bias")))
    got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(w.shape)
    errs[t.name] = [t.tensor_type.name, float(np.abs(got - w).max() / (np.abs(w).max() or 1.0))]
print(json.dumps({
    "arch": field("general.architecture"),
    "layers": field("qwen2.block_count"),
    "heads_kv": field("qwen2.attention.head_count_kv"),
    "tokenizer": field("tokenizer.ggml.model"),
    "pre": field("tokenizer.ggml.pre"),
    "n_tokens": len(r.fields["tokenizer.ggml.tokens"].data),
    "file_type": field("general.file_type"),
    "names": sorted(t.name for t in r.tensors),
    "errs": errs,
}))
`;

// Python start-ups and conversions of a 4 MB model: seconds when quiet, far longer on the loaded 2 cores.
describe('gguf_from_hf.py', () => {
  let python: string;
  let modelDir: string;
  let work: string;
  beforeAll(async () => {
    python = await ensureGgufPython(REPO_ROOT, () => {});
    modelDir = (await tinyBundle()).modelDir;
    work = mkdtempSync(join(tmpdir(), 'toolrl-gguf-'));
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const read = async (type: 'f32' | 'q8_0' | 'q4_0') => {
    const out = join(work, `${type}.gguf`);
    await run(python, [
      join(REPO_ROOT, 'bench/rollout/llamacpp/gguf_from_hf.py'),
      modelDir,
      out,
      '--type',
      type,
    ]);
    const { stdout } = await run(python, ['-c', CHECK, out, join(modelDir, 'model.safetensors')]);
    return JSON.parse(stdout) as {
      arch: string;
      layers: number;
      heads_kv: number;
      tokenizer: string;
      pre: string;
      n_tokens: number;
      file_type: number;
      names: string[];
      errs: Record<string, [string, number]>;
    };
  };

  it('writes the qwen2 model llama.cpp loads: metadata, tokenizer, every tensor by its GGUF name, f32 exact', async () => {
    const g = await read('f32');
    expect(g).toMatchObject({ arch: 'qwen2', layers: 2, heads_kv: 2, tokenizer: 'gpt2', pre: 'qwen2' });
    expect(g.n_tokens).toBe(1024); // the model's vocab_size, every row of the embedding named
    expect(g.names).toContain('token_embd.weight');
    expect(g.names).toContain('blk.1.attn_q.bias');
    expect(g.names).not.toContain('output.weight'); // tied: llama.cpp reads token_embd as the output projection
    expect(g.names).toHaveLength(2 * 12 + 2);
    for (const [name, [type, err]] of Object.entries(g.errs)) {
      expect(type, name).toBe('F32');
      expect(err, name).toBe(0);
    }
  });

  it('quantises every matrix (embedding included) and keeps norms and biases f32', async () => {
    for (const [type, qname, tol, ftype] of [
      ['q8_0', 'Q8_0', 0.01, 7],
      ['q4_0', 'Q4_0', 0.15, 2],
    ] as const) {
      const g = await read(type);
      expect(g.file_type).toBe(ftype);
      for (const [name, [t, err]] of Object.entries(g.errs)) {
        const matrix = !/norm|bias/.test(name);
        expect(t, name).toBe(matrix ? qname : 'F32');
        expect(err, name).toBeLessThan(matrix ? tol : 1e-9);
        if (matrix) expect(err, name).toBeGreaterThan(0);
      }
    }
  });

  it('reuses a written GGUF and names it by the writer and the model folder', async () => {
    const a = await ggufOf({ python }, REPO_ROOT, modelDir, 'q8_0', () => {});
    const b = await ggufOf({ python }, REPO_ROOT, modelDir, 'q8_0', () => {
      throw new Error('written twice');
    });
    expect(b).toBe(a);
    expect(a).toMatch(/model-q8_0-[0-9a-f]{8}\.gguf$/);
  });
});

describe('the llama.cpp table', () => {
  const m = (engine: string, decodeTokPerS: number): Measurement => ({
    engine,
    G: 8,
    P: 128,
    N: 256,
    loadAvg: 1,
    // 1 s of prefill, then 8 x 255 tokens at the given rate
    prefillMs: 1000,
    totalMs: 1000 + (1000 * 8 * 255) / decodeTokPerS,
    prefillTokens: 1024,
    decodeSteps: 255,
    decodeTokens: 8 * 255,
    decodeMs: (1000 * 8 * 255) / decodeTokPerS,
  });
  const row = (llama: boolean): Row => ({
    dtype: 'int4',
    G: 8,
    weightBytes: 317e6,
    cacheBytesPerToken: 12288,
    gguf: 'q4_0',
    rounds: [
      { bandwidth: 30e9, ours: m('toolrl', 100), llama: llama ? m('haswell', 125) : undefined },
      { bandwidth: 30e9, ours: m('toolrl', 120), llama: llama ? m('haswell', 100) : undefined },
    ],
  });
  const ctx = {
    command: 'x',
    machine: 'cpu',
    threads: 2,
    model: 'm',
    warmupTokens: 16,
    llamaCpp: 'nlc 3.21.1',
  };

  it('shows llama.cpp decode rates and the ratios taken within each round', () => {
    const text = renderTables([row(true)], ctx);
    expect(text).toContain('llama.cpp: nlc 3.21.1; CPU backend haswell;');
    // per-round ratios 0.80x and 1.20x: median 1.00x, not the ratio of the medians (110 / 112.5)
    expect(text).toContain('| int4 | 8 | Q4_0 | 1024 (1024-1024) | 112.5 (100.0-125.0) |');
    // then end to end, and the CPU-time columns (empty: this fixture's rounds carry no CPU times)
    expect(text).toMatch(/\| 1\.00x \(0\.80-1\.20\) \| [\d.]+x \([\d.]+-[\d.]+\) \| - \| - \/ - \|\n/);
  });

  it("says how llama.cpp sampled: the engine's full vocabulary by default, greedy with top-k 1", () => {
    expect(renderTables([row(true)], ctx)).toContain('the same sampling (temperature 1, full vocabulary)');
    const greedy = renderTables([row(true)], { ...ctx, llamaTopK: 1 });
    expect(greedy).toContain('greedy sampling (top-k 1');
    expect(greedy).not.toContain('the same sampling');
  });

  it('leaves the table out when llama.cpp did not run', () => {
    expect(renderTables([row(false)], ctx)).not.toContain('llama.cpp decode tok/s');
  });
});
