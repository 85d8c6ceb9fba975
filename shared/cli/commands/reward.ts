// `toolrl reward score|list`: score a trajectory file with one reward or with a run's weighted combination.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson, readStdin, readStructuredFile } from '../io.ts';

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The `reward:` block of a run config, or a file that is one (`functions`/`modules` at the top); else null. */
function rewardBlock(doc: Record<string, unknown>): Record<string, unknown> | null {
  if (isObject(doc['reward'])) return doc['reward'];
  return 'functions' in doc || 'modules' in doc ? doc : null;
}

async function readTrajectory(path: string): Promise<unknown> {
  let text: string;
  try {
    text = path === '-' ? await readStdin() : readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

interface ScoreOptions {
  reward?: string;
  config?: string;
  module: string[];
  json?: boolean;
}

async function score(trajectoryPath: string, opts: ScoreOptions) {
  const { z } = await import('zod');
  await import('#shared/bfcl/register-reward'); // BFCL's reward joins the built-ins
  const rewards = await import('#shared/rewards/index');
  if (!opts.reward && !opts.config)
    throw new UsageError('give --reward NAME, or --config FILE with a `reward:` block');
  const { resolveRewardBlock, rewardConfig, toolrlName } = await import('#shared/config/resolve');
  const doc = opts.config ? readStructuredFile(opts.config) : {};
  if (!isObject(doc)) throw new UsageError(`${opts.config} must hold a mapping`);
  // Other systems' reward names and config keys (`retool_reward`, `format_reward_weight`) in toolrl's.
  const raw = rewardBlock(doc);
  const block = raw ? resolveRewardBlock(raw) : null;
  const name = opts.reward === undefined ? undefined : toolrlName.reward(opts.reward);
  const baseDir = opts.config ? dirname(resolve(opts.config)) : process.cwd();
  const cliModules = opts.module.map((m) => resolve(m));

  let input: ReturnType<typeof rewards.normaliseRewardInput>;
  try {
    input = rewards.normaliseRewardInput(await readTrajectory(trajectoryPath));
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const detail = err instanceof z.ZodError ? z.prettifyError(err) : (err as Error).message;
    throw new UsageError(`${trajectoryPath} is not a reward input:\n${detail}`);
  }

  let scoreFn: (i: typeof input) => unknown;
  let closeFn: { close?: () => Promise<void> } | undefined;
  try {
    if (name) {
      const functions = Array.isArray(block?.['functions'])
        ? (block['functions'] as Record<string, unknown>[])
        : [];
      const spec = functions.find((f) => f['name'] === name);
      const config = block ? (spec?.['config'] ?? {}) : rewardConfig(name, doc);
      if (spec && spec['path'] !== undefined) {
        // A Python function of the config: scored alone, weight 1.
        const python = block?.['python'];
        const built = await rewards.buildReward(
          { functions: [{ ...spec, weight: 1 }], ...(python !== undefined ? { python } : {}) } as never,
          { baseDir },
        );
        closeFn = built;
        scoreFn = built;
      } else {
        const modules = [...((block?.['modules'] as string[] | undefined) ?? []), ...cliModules];
        const registry = await rewards.rewardRegistry(modules, { baseDir });
        scoreFn = rewards.createReward(registry, name, config);
      }
    } else {
      if (!block) throw new Error(`${opts.config} has no \`reward:\` block (or top-level \`functions\`)`);
      const modules = [...((block['modules'] as string[] | undefined) ?? []), ...cliModules];
      const built = await rewards.buildReward({ ...block, modules }, { baseDir });
      closeFn = built;
      scoreFn = built;
    }
  } catch (err) {
    const detail = err instanceof z.ZodError ? z.prettifyError(err) : (err as Error).message;
    throw new UsageError(opts.config ? `${opts.config}: ${detail}` : detail);
  }

  let out: {
    score: number;
    components: Record<string, number>;
    errors?: { reward: string; message: string }[];
  };
  try {
    out = (await scoreFn(input)) as typeof out;
  } catch (err) {
    throw new UsageError(`cannot score ${trajectoryPath}: ${(err as Error).message}`);
  } finally {
    await closeFn?.close?.();
  }
  if (opts.json) return printJson(out);
  process.stdout.write(`score ${out.score}\n`);
  for (const [k, v] of Object.entries(out.components)) process.stdout.write(`  ${k.padEnd(28)} ${v}\n`);
  for (const e of out.errors ?? []) process.stdout.write(`error ${e.reward}: ${e.message}\n`);
}

export function register(program: Command): void {
  const reward = program.command('reward').description('Score trajectories with the reward functions');
  reward
    .command('score')
    .description(
      'Score one trajectory (a hand-written reward input or a pipeline trajectory plus ground_truth)',
    )
    .argument(
      '<trajectory>',
      'JSON file (or - for stdin): {"turns": [{"text", "toolCalls"?}], "ground_truth", …}',
    )
    .option(
      '--reward <name>',
      'one reward (format, toolcall, retool, toolbench, exact_match, or a module reward)',
    )
    .option(
      '--config <file>',
      "with --reward: that reward's config, or a run config / reward config whose entry for it is used; " +
        'without: a run config (or reward config) whose weighted combination is scored',
    )
    .option(
      '--module <file>',
      'a reward module to load (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .option('--json', 'print {"score": number, "components": {…}}')
    .action(score);
  reward
    .command('list')
    .description('List the reward functions')
    .option(
      '--module <file>',
      'a reward module to load too (repeatable)',
      (v: string, acc: string[]) => [...acc, v],
      [],
    )
    .option('--json', 'print [{name, description}]')
    .action(async (opts: { module: string[]; json?: boolean }) => {
      await import('#shared/bfcl/register-reward');
      const { rewardRegistry } = await import('#shared/rewards/build');
      let registry: Awaited<ReturnType<typeof rewardRegistry>>;
      try {
        registry = await rewardRegistry(
          opts.module.map((m) => resolve(m)),
          { baseDir: process.cwd() },
        );
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const rows = registry.list().map((d) => ({ name: d.name, description: d.description }));
      if (opts.json) printJson(rows);
      else for (const r of rows) process.stdout.write(`${r.name.padEnd(14)} ${r.description}\n`);
    });
}
