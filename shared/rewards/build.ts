// Builds the reward of a run from its `reward:` config: each listed reward created with its config, scores
// combined as the weighted sum  score = sum_i weight_i * score_i, and every part logged under its name
// (`<name>` for its score, `<name>/<component>` for its components).
import type { z } from 'zod';
import type { PythonHost } from '#shared/pyhost/host';
import { type RewardConfig, RewardConfigSchema, rewardLabel } from '#shared/schemas/config/reward';
import type { RewardInput } from './input.ts';
import { loadRewardModule, MODULE_REWARD_TIMEOUT_SEC, withinSeconds } from './modules.ts';
import { RewardRegistry } from './registry.ts';
import type { RewardError, RewardFn, RewardOutput, ScoreFn } from './types.ts';

export interface BuildOptions {
  /** Where `reward.modules` paths are resolved from: the directory of the config file. */
  baseDir: string;
}

const describeIssues = (error: z.ZodError): string =>
  error.issues.map((i) => `${i.path.length > 0 ? `${i.path.join('.')}: ` : ''}${i.message}`).join('; ');

/** The built-in rewards plus those of the given modules. */
export async function rewardRegistry(modules: string[], opts: BuildOptions): Promise<RewardRegistry> {
  const registry = new RewardRegistry();
  for (const path of modules) {
    for (const def of await loadRewardModule(path, opts.baseDir)) registry.register(def, `module ${path}`);
  }
  return registry;
}

/**
 * One reward with its config validated; its output is its own (components not prefixed). A reward from
 * `reward.modules` is user code: each call is cut off after `timeoutSec` (default 60), so one that never settles
 * fails its record like one that throws (retried, then dead-lettered and counted) instead of holding the stage.
 */
export function createReward(
  registry: RewardRegistry,
  name: string,
  config: unknown = {},
  timeoutSec?: number,
): ScoreFn {
  const def = registry.get(name);
  const parsed = def.config.safeParse(config ?? {});
  if (!parsed.success) throw new Error(`reward ${name}: bad config: ${describeIssues(parsed.error)}`);
  const score = def.create(parsed.data);
  if (def.module === undefined) {
    if (timeoutSec !== undefined)
      throw new Error(
        `reward ${name}: \`timeout\` applies to a Python function (\`path\`) or a reward from reward.modules, not to a built-in`,
      );
    return score;
  }
  const sec = timeoutSec ?? MODULE_REWARD_TIMEOUT_SEC;
  return (input) =>
    withinSeconds(
      Promise.resolve().then(() => score(input)),
      sec,
      `reward ${name} from ${def.module}`,
    );
}

/**
 * The run's reward: asynchronous, since user rewards may be. Configuration errors (unknown reward, bad config,
 * a reward listed twice, a module or Python function that cannot load) throw here; a built-in or module reward
 * that throws while scoring rejects with its name in the message, so the caller can set the trajectory aside with
 * that reason; a Python function's failure is a reward error in the output (see python.ts).
 */
export async function buildReward(
  config: z.input<typeof RewardConfigSchema> | RewardConfig,
  opts: BuildOptions,
): Promise<RewardFn> {
  const cfg = RewardConfigSchema.parse(config);
  const registry = await rewardRegistry(cfg.modules, opts);
  const seen = new Set<string>();
  let host: PythonHost | undefined;
  const parts: { name: string; weight: number; score: ScoreFn }[] = [];
  try {
    for (const [i, spec] of cfg.functions.entries()) {
      const name = rewardLabel(spec);
      if (seen.has(name)) throw new Error(`reward ${name} is listed twice in reward.functions; list it once`);
      seen.add(name);
      if (spec.path === undefined) {
        parts.push({
          name,
          weight: spec.weight,
          score: createReward(registry, spec.name, spec.config, spec.timeout),
        });
        continue;
      }
      const { PythonReward, pythonRewardHost } = await import('./python.ts');
      host ??= pythonRewardHost(opts.baseDir, cfg.python);
      const fn = await PythonReward.load(host, spec, `r${i}`, opts.baseDir);
      parts.push({ name, weight: spec.weight, score: (input) => fn.score(input) });
    }
  } catch (err) {
    await host?.close();
    throw err;
  }
  const reward: RewardFn = async (input: RewardInput): Promise<RewardOutput> => {
    let score = 0;
    const components: Record<string, number> = {};
    const errors: RewardError[] = [];
    for (const part of parts) {
      let out: RewardOutput;
      try {
        out = await part.score(input);
      } catch (err) {
        throw new Error(`reward ${part.name} failed: ${(err as Error).message}`, { cause: err });
      }
      score += part.weight * out.score;
      components[part.name] = out.score;
      for (const [k, v] of Object.entries(out.components)) components[`${part.name}/${k}`] = v;
      if (out.errors) errors.push(...out.errors);
    }
    // The stateful tools' final rewards are logged beside the score (the `tool_reward` reward adds them to it).
    for (const [tool, v] of Object.entries(input.toolRewards ?? {})) components[`tool/${tool}`] ??= v;
    return { score, components, ...(errors.length ? { errors } : {}) };
  };
  if (host) reward.close = () => host!.close();
  return reward;
}
