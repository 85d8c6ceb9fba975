// `toolrl plan` as a user runs it: the real command in a child process on the shipped 7B example (Qwen2.5-7B,
// full fine-tuning, gradient checkpointing), planned by the learner's own planner. Refused on one 24 GB GPU with
// the numbers and what would help; accepted on 8 x 80 GB (FSDP); `--env prod` plans for cdk.json's prod learner.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { HANG_MS } from '../../helpers/hang.ts';

const bin = new URL('../../../bin/toolrl.mjs', import.meta.url).pathname;
const EXAMPLE = new URL('../../../examples/quickstart/run-qwen2.5-7b-8gpu.yaml', import.meta.url).pathname;
const toolrl = (args: string[]) => {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', timeout: HANG_MS });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
};

describe('toolrl plan', () => {
  it('refuses a 7B full fine-tune on one 24 GB GPU, naming the parts and what would make it fit', () => {
    const r = toolrl(['plan', EXAMPLE, '--gpus', '1', '--gpu-memory', '24']);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stdout).toMatch(/7\.62B parameters, 28 layers/);
    expect(r.stdout).toMatch(/learner peak [\d.]+ GB per GPU \(1 GPU\) of 24\.0 GB: optimizer 60\.9, /);
    expect(r.stdout).toMatch(/does NOT fit\n {2}- LoRA/);
    expect(r.stdout).toMatch(/more GPUs \(trainer\.num_gpus/);
  });

  it('accepts it on 8 x 80 GB with FSDP: an eighth of the training state per GPU', () => {
    const r = toolrl(['plan', EXAMPLE, '--gpus', '8', '--gpu-memory', '80', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout);
    expect(plan).toMatchObject({ device: 'cuda', gpus: 8, capacityGb: 80, fits: true });
    expect(plan.partsGb.optimizer).toBeCloseTo((8 * 7.6156) / 8, 1);
  });

  it("plans for an environment's learner: its GPUs, and the smallest GPU memory among its instance types", () => {
    const r = toolrl(['plan', EXAMPLE, '--env', 'prod']);
    expect(r.stdout).toMatch(/^environment prod: 8 GPU\(s\) of p4d\.24xlarge \/ p5\.48xlarge\n/);
    expect(r.stdout).toMatch(/per GPU \(8 GPUs\) of 40\.0 GB/); // p4d's A100 40GB
  });
});
