// The one merge rule of a run config: a curriculum stage's complete config is the run config with the stage's
// `overrides` deep-merged over it, every section alike (rollout, reward, algorithm, trainer, ...), then validated.
import { type RunConfig, RunConfigSchema, type StageConfig } from '#shared/schemas/config/run';
import { isPlain, type Plain } from './apply-aliases.ts';

/** Deep merge where mappings merge key by key and anything else (lists included) replaces. */
export function deepMerge(base: unknown, over: unknown): unknown {
  if (!isPlain(base) || !isPlain(over)) return over === undefined ? base : over;
  const out: Plain = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = deepMerge(base[k], v);
  return out;
}

/** Why a stage's overrides make an invalid config: the merged config's problems, each with its field path. */
export class StageConfigError extends Error {
  override name = 'StageConfigError';
}

/** The config a curriculum stage runs with: its overrides deep-merged over the run config, validated. */
export function mergeStage(config: RunConfig, stage: StageConfig): RunConfig {
  const parsed = RunConfigSchema.safeParse(deepMerge(config, stage.overrides));
  if (!parsed.success)
    throw new StageConfigError(
      `stage ${stage.name}: overrides make an invalid config: ${parsed.error.issues
        .map((i) => `${i.path.join('.') || '(config)'}: ${i.message}`)
        .join('; ')}`,
    );
  return parsed.data;
}
