// `trainer.num_gpus: 2` on the embedded runtime, on CPU through `toolrl train --learner-device cpu`: the learner
// runs as 2 FSDP2 ranks under torchrun (rank 0 speaks the stdio protocol, gloo between the ranks), trains the
// quickstart's calculator questions to the end of the run, and its first step's loss is the one-process run's.
// Both runs start from the same v0 (no warm start) and one step takes all 8 questions, so they sample the same
// groups (sampling is seeded per sample and turn) and the steps differ only in how the work is split.
// Two whole runs (a torchrun start, two ONNX exports each) take minutes on a loaded 2-core machine, most of it
// fixed start-up cost that a smaller run does not cut, and 8 prompts x 4 samples are what it takes for the tiny
// model's rewards to differ within a group (else the step has no gradient to compare). So it runs on request:
// TOOLRL_SLOW_TESTS=1 (README, "Development"). The same parity on fixed batches, with 2 and 3 ranks, resume and a
// killed rank, runs in every `npm test` (gpu-worker/tests/test_distributed_on_cpu.py).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { train } from '#shared/runtime/train';
import { quickstartRows, stepMetrics, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const one = tinyRun('sharded-1');
const two = tinyRun('sharded-2');
afterAll(() => {
  one.close();
  two.close();
});

const config = (numGpus: number) =>
  tinyConfig({
    rollout: { n: 4 },
    reward: { functions: [{ name: 'toolcall' }] },
    trainer: { batch_prompts: 8, num_gpus: numGpus, micro_batch_tokens: 512, lr: 1.0e-3 },
  });

describe.runIf(process.env['TOOLRL_SLOW_TESTS'] === '1')('the sharded learner in an embedded run', () => {
  it('trains with trainer.num_gpus 2 on CPU ranks and matches the one-process first-step loss', async () => {
    const rows = (await quickstartRows('train')).slice(0, 8);
    one.dataset('train.parquet', rows);
    two.dataset('train.parquet', rows);
    const run = async (r: typeof one, numGpus: number) => {
      const configPath = join(r.dir, 'run.yaml');
      writeFileSync(configPath, toYaml(config(numGpus)));
      return train({ configPath, workdir: join(r.dir, 'work'), ortThreads: 1, learnerDevice: 'cpu' });
    };
    const [single, sharded] = [await run(one, 1), await run(two, 2)];

    for (const result of [single, sharded]) {
      expect(result.reason).toBeNull();
      expect(result.status).toBe('completed');
      expect(result.learner).toMatchObject({ step: 1, groupsConsumed: 8, done: true });
    }
    const log = readFileSync(join(sharded.runDir, 'learner.log'), 'utf8');
    expect(log).toMatch(/rank 1 of 2 \(local 1 of 2\) on cpu, gloo/);
    expect(log).toMatch(/sharded .* over 2 ranks/);
    const [a] = stepMetrics(single);
    const [b] = stepMetrics(sharded);
    // The same groups: the same rewards and sampled tokens
    expect(b!.reward_mean).toBe(a!.reward_mean);
    expect(b!.loss_tokens).toBe(a!.loss_tokens);
    // and the same step, to fp32 rounding
    for (const k of ['pg_loss', 'entropy', 'grad_norm', 'clip_frac'])
      expect(b![k]!, k).toBeCloseTo(a![k]!, 5);
  });
});
