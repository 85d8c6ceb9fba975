// The resolver at the edge: the one place a run config is read. It takes the YAML text and the command-line
// overrides and returns the run config in toolrl's own names (every verl, MindSpeed-RL and seed-project name
// translated here, apply-aliases.ts and the table in aliases.ts), validated with every default filled in; and, for
// run.json, each curriculum stage's complete config (one merge rule, merge.ts) with the tool entries in toolrl's names
// (tools.ts). Nothing downstream translates a name or merges a stage again: the stages and the learner look a
// stage's config up in run.json. The other edges (the CLI's --format, --prompt-type, --reward, a tools file) take
// their names from here too.
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ChatTemplateError, resolveChatTemplate } from '#shared/policy/chat-templates';
import { type RunConfig, RunConfigSchema } from '#shared/schemas/config/run';
import type { ResolvedRun } from '#shared/schemas/run-status';
import { parserFormatName, promptTypeName, REWARD_CONFIG_ALIASES, rewardName } from './aliases.ts';
import { AliasError, applyConfigAliases, isPlain, type Plain } from './apply-aliases.ts';
import { mergeStage, StageConfigError } from './merge.ts';
import { applyOverrides } from './overrides.ts';
import { resolveRunTools, ToolConfigError } from './tools.ts';

export { knownToolClasses, readToolsFile, resolveToolSpecs } from './tools.ts';

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export interface LoadedRunConfig {
  /** Validated, with every default filled in: what the run uses (and run.json records). */
  config: RunConfig;
  /** The config as written, in toolrl's names, with the overrides applied: what is uploaded as config.yaml. */
  effective: Plain;
  /** One line per key accepted but ignored (another system's setting with no meaning here). */
  notices: string[];
}

/**
 * Reads a run config: YAML, other systems' names resolved (apply-aliases.ts), command-line overrides applied
 * (overrides.ts), then validated, every curriculum stage's merged config too; throws ConfigError listing every
 * problem with its field path.
 */
export function loadRunConfig(
  text: string,
  source: string,
  overrides: readonly string[] = [],
  /** The config file's folder, where a `model.chat_template` file is read from (client side only). */
  baseDir?: string,
): LoadedRunConfig {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (err) {
    throw new ConfigError(`${source} is not valid YAML: ${(err as Error).message}`);
  }
  if (!isPlain(raw))
    throw new ConfigError(`${source} must be a YAML mapping of sections (model, data, rollout, …)`);
  let effective: Plain;
  const notices: string[] = [];
  try {
    const aliased = applyConfigAliases(raw);
    notices.push(...aliased.notices);
    const overridden = applyOverrides(aliased.config, overrides);
    notices.push(...overridden.notices);
    // A second pass translates names and values the overrides spelled another way (kl_loss_type=low_var_kl).
    effective = applyConfigAliases(overridden.config).config;
  } catch (err) {
    if (err instanceof AliasError) throw new ConfigError(`${source}: ${err.message}`);
    throw err;
  }
  const parsed = RunConfigSchema.safeParse(effective);
  if (!parsed.success)
    throw new ConfigError(
      `${source}${overrides.length ? ' (with the command-line overrides)' : ''} is not a valid run config:\n${z.prettifyError(parsed.error)}`,
    );
  const config = parsed.data;
  if (config.model.chat_template !== undefined) {
    // The template's text, wherever it came from: run.json, the rollouts and the learner read the same one.
    try {
      config.model.chat_template = resolveChatTemplate(config.model.chat_template, baseDir);
    } catch (err) {
      if (err instanceof ChatTemplateError) throw new ConfigError(`${source}: ${err.message}`);
      throw err;
    }
    if (isPlain(effective.model)) effective.model.chat_template = config.model.chat_template;
  }
  for (const stage of config.stages ?? []) stageOf(config, stage, source);
  return { config, effective, notices };
}

/** Parses and validates a run config; throws ConfigError listing every problem with its field path. */
export function parseRunConfig(text: string, source: string): RunConfig {
  return loadRunConfig(text, source).config;
}

function stageOf(config: RunConfig, stage: NonNullable<RunConfig['stages']>[number], source: string) {
  try {
    return mergeStage(config, stage);
  } catch (err) {
    if (err instanceof StageConfigError) throw new ConfigError(`${source}: ${err.message}`);
    throw err;
  }
}

/** The tools files a run config and its stages name (`tools.config_file`), to read before `resolveRun`. */
export const toolsFilesOf = (config: RunConfig): string[] => [
  ...new Set(
    [config, ...(config.stages ?? []).map((s) => mergeStage(config, s))].flatMap((c) =>
      c.tools.config_file !== undefined ? [c.tools.config_file] : [],
    ),
  ),
];

/**
 * What run.json records for the stages to look up (`resolved`): the config a group of no curriculum stage runs with
 * (validation, a run without stages) and each stage's complete config, each with its tool entries in toolrl's
 * names and its tools file inlined (`toolsFile(path)`: the text of a file toolsFilesOf named). `config` is the run
 * config as run.json records it.
 */
export function resolveRun(
  config: RunConfig,
  toolsFile: (path: string) => string | undefined = () => undefined,
  source = 'config.yaml',
): ResolvedRun {
  const withTools = (c: RunConfig): RunConfig => {
    try {
      const file = c.tools.config_file;
      return { ...c, tools: resolveRunTools(c.tools, file === undefined ? undefined : toolsFile(file)) };
    } catch (err) {
      if (err instanceof ToolConfigError) throw new ConfigError(`${source}: ${err.message}`);
      throw err;
    }
  };
  const stages: Record<string, RunConfig> = {};
  for (const stage of config.stages ?? []) stages[stage.name] = withTools(stageOf(config, stage, source));
  return { run: withTools(config), stages };
}

/**
 * toolrl's names for what a command line names (`toolrl parse --format qwen25`, `dataset convert --prompt-type
 * qwen_retool`, `toolrl reward --reward retool_reward`): the name itself when it is not another system's.
 */
export const toolrlName = {
  parserFormat: parserFormatName,
  promptType: (name: string): string => promptTypeName(name),
  reward: rewardName,
} as const;

/** A `reward:` block (of a run config, or a file that is one) in toolrl's names: reward names and their config keys. */
export function resolveRewardBlock(block: Plain): Plain {
  try {
    const reward = applyConfigAliases({ reward: block }).config.reward;
    return isPlain(reward) ? reward : block;
  } catch (err) {
    if (err instanceof AliasError) throw new ConfigError(err.message);
    throw err;
  }
}

/** A reward's config with another system's key names (the ToolBench seed's `format_reward_weight`) as its own. */
export function rewardConfig(reward: string, config: unknown): unknown {
  if (!isPlain(config)) return config;
  return Object.fromEntries(
    Object.entries(config).map(([k, v]) => [
      REWARD_CONFIG_ALIASES.find((a) => a.reward === rewardName(reward) && a.from === k)?.to ?? k,
      v,
    ]),
  );
}
