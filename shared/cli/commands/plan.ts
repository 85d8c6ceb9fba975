// `toolrl plan CONFIG [--gpus N] [--gpu-memory GB | --env ENV] [--json]`: does the run's learner fit its GPUs?
// Weights, gradients, optimizer state, activations (with and without checkpointing), the log-prob head's logits
// chunks, per GPU; the numbers come from the learner's own planner (`python -m toolrl_learner plan`), the same
// function that refuses a run at start. With --env the GPUs are the environment's (cdk.json `learner`).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { z } from 'zod';
import { UsageError } from '../errors.ts';

const positive = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} must be a positive number, got ${v}`);
  return n;
};

/** The part of an environment's settings a plan needs (infra/lib/settings.ts validates all of it at synth). */
const LearnerShapeSchema = z.object({
  learner: z.object({
    instanceTypes: z.array(z.string()).min(1),
    gpus: z.number().int().positive(),
    nodes: z.number().int().positive().default(1),
  }),
});

/** GPUs and the smallest GPU memory of an environment's learner job, from cdk.json. */
export async function environmentGpus(
  env: string,
  cwd = process.cwd(),
): Promise<{ gpus: number; memoryGb: number; where: string }> {
  const { gpuMemoryGb } = await import('#shared/deployment/gpus');
  const { REPO_ROOT } = await import('#shared/runtime/embedded');
  const path = [join(cwd, 'cdk.json'), join(REPO_ROOT, 'cdk.json')].find((p) => existsSync(p));
  if (!path)
    throw new UsageError('--env needs cdk.json (the environments live in its toolrl:environments context)');
  const envs = (JSON.parse(readFileSync(path, 'utf8')) as { context?: Record<string, unknown> }).context?.[
    'toolrl:environments'
  ] as Record<string, unknown> | undefined;
  if (!envs?.[env])
    throw new UsageError(`${path} defines no environment ${env} (${Object.keys(envs ?? {}).join(', ')})`);
  const { learner } = LearnerShapeSchema.parse(envs[env]);
  const memories = learner.instanceTypes.map((t) => {
    const gb = gpuMemoryGb(t);
    if (gb === undefined)
      throw new UsageError(`environment ${env}: unknown GPU memory of ${t}; pass --gpu-memory`);
    return gb;
  });
  const gpus = learner.gpus * learner.nodes;
  return {
    gpus,
    memoryGb: Math.min(...memories),
    where: `environment ${env}: ${learner.nodes > 1 ? `${learner.nodes} x ` : ''}${learner.gpus} GPU(s) of ${learner.instanceTypes.join(' / ')}`,
  };
}

export function register(program: Command): void {
  program
    .command('plan')
    .description(
      "Check that a run's learner fits its GPUs: memory per GPU, part by part, before a run is paid for",
    )
    .argument('<config>', 'run config (YAML)')
    .option(
      '--gpus <n>',
      'GPUs (default: trainer.num_gpus, or the environment with --env)',
      positive('--gpus'),
    )
    .option(
      '--gpu-memory <gb>',
      'memory of one GPU in GB, e.g. 24 (A10G), 80 (H100)',
      positive('--gpu-memory'),
    )
    .option('--env <env>', "plan for an AWS environment's learner (cdk.json): its GPUs and their memory")
    .option('--cpu', 'plan the CPU learner (fp32 in host memory) instead')
    .option('--json', 'print the plan as JSON')
    .action(
      async (
        config: string,
        o: { gpus?: number; gpuMemory?: number; env?: string; cpu?: boolean; json?: boolean },
      ) => {
        const { parseRunConfig, ConfigError } = await import('#shared/config/resolve');
        const { learnerPython, REPO_ROOT } = await import('#shared/runtime/embedded');
        let text: string;
        try {
          text = readFileSync(config, 'utf8');
        } catch (err) {
          throw new UsageError(`cannot read ${config}: ${(err as Error).message}`);
        }
        let parsed: unknown;
        try {
          parsed = parseRunConfig(text, config);
        } catch (err) {
          if (err instanceof ConfigError) throw new UsageError(err.message);
          throw err;
        }
        const target = o.env ? await environmentGpus(o.env) : undefined;
        if (target && !o.json) process.stdout.write(`${target.where}\n`);
        const args = ['-m', 'toolrl_learner', 'plan', '-', '--base-dir', dirname(resolve(config))];
        const gpus = o.gpus ?? target?.gpus;
        const memory = o.gpuMemory ?? target?.memoryGb;
        if (gpus !== undefined) args.push('--gpus', String(gpus));
        if (memory !== undefined) args.push('--gpu-memory-gb', String(memory));
        if (o.cpu) args.push('--cpu');
        if (o.json) args.push('--json');
        const r = spawnSync(learnerPython(), args, {
          cwd: REPO_ROOT,
          input: JSON.stringify(parsed),
          encoding: 'utf8',
        });
        if (r.error)
          throw new Error(`cannot run the learner's planner (${learnerPython()}): ${r.error.message}`);
        process.stdout.write(r.stdout);
        if (r.status !== 0 && r.status !== 3)
          throw new UsageError(r.stderr.trim().split('\n').at(-1) ?? 'plan failed');
        // 3: it does not fit; scripts can refuse to submit on it.
        process.exitCode = r.status ?? 1;
      },
    );
}
