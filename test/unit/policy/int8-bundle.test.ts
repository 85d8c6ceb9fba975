// An int8 bundle (`export --quantization int8`: MatMulNBits projections and lm_head) through the engine: group
// sampling with the KV cache records the same log-probs as Python onnxruntime computes for the same tokens over
// the whole sequence in one cache-free pass of the same graph (ort_logprobs.py). The two differ only in float
// rounding (cached vs full attention, onnxruntime-node 1.30 vs Python 1.31 kernels), far inside the 1e-3 fp32
// parity bound, while a wrong row, position or temperature moves a log-prob by far more than 1e-5. (Against the
// other graph they may differ by ~4e-3: MatMulNBits quantises its input per block on the fly, so a last-bit
// difference in attention can move a block's int8 rounding.)
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPolicy, type Policy } from '#shared/policy/policy';
import { DEFAULT_SAMPLING } from '#shared/policy/sampler';
import { LEARNER_PYTHON, tinyBundle } from '../../../bench/support/tiny-model.ts';

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'ort_logprobs.py');

let bundleDir: string;
let policy: Policy;
beforeAll(async () => {
  ({ bundleDir } = await tinyBundle({ quantization: 'int8' }));
  policy = await loadPolicy(bundleDir, { threads: 1 });
});
afterAll(async () => policy?.dispose());

function pythonLogprobs(req: { temperature: number; prompt: number[]; samples: number[][] }) {
  return new Promise<number[][]>((ok, fail) => {
    const child = execFile(
      LEARNER_PYTHON,
      [SCRIPT, bundleDir],
      { maxBuffer: 16 << 20 },
      (err, stdout, stderr) =>
        err ? fail(new Error(`ort_logprobs.py: ${stderr || err.message}`)) : ok(JSON.parse(stdout).samples),
    );
    child.stdin!.end(JSON.stringify(req));
  });
}

describe('int8 bundle', () => {
  it('is an int8 bundle', () => {
    expect(policy.manifest.quantization).toBe('int8');
  });

  it('samples a group whose log-probs match Python onnxruntime on the same tokens', async () => {
    const prompt = policy.renderPrompt([{ role: 'user', content: 'What is 17 * 23?' }]);
    const temperature = 0.7;
    const samples = await policy.sampleGroup(prompt, 3, {
      ...DEFAULT_SAMPLING,
      temperature,
      maxNewTokens: 12,
      seed: 5,
    });
    expect(samples).toHaveLength(3);
    for (const s of samples) {
      expect(s.tokenIds.length).toBeGreaterThan(0);
      expect(s.logprobs).toHaveLength(s.tokenIds.length);
      for (const lp of s.logprobs) expect(lp).toBeLessThanOrEqual(0);
    }
    // Different seeds' streams: the rows are not copies of one another.
    expect(new Set(samples.map((s) => s.tokenIds.join(','))).size).toBeGreaterThan(1);
    const theirs = await pythonLogprobs({ temperature, prompt, samples: samples.map((s) => s.tokenIds) });
    samples.forEach((s, i) => {
      const worst = Math.max(...s.logprobs.map((lp, j) => Math.abs(lp - theirs[i]![j]!)));
      expect(worst).toBeLessThan(1e-5); // measured: ~1e-7
    });
  });
});
