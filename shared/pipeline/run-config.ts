// The files a run config refers to (datasets, tool and reward code, SFT data, prompt templates) and where they go
// under the run's input prefix: the config as stored in run.json names every data path by its blob key. The config
// itself is read by the resolver (shared/config/resolve.ts).
import { basename, dirname, isAbsolute, join } from 'node:path';
import { ConfigError } from '#shared/config/resolve';
import { looksLikePath } from '#shared/data/prompts/templates';
import type { RunConfig } from '#shared/schemas/config/run';
import type { ToolSpec } from '#shared/schemas/config/tools';
import { keys } from '#shared/topology';

const asList = (v: string | string[] | undefined): string[] =>
  v === undefined ? [] : Array.isArray(v) ? v : [v];

/** Datasets of the run, over the top-level data block and every curriculum stage, train and val. */
export function datasetPaths(config: RunConfig): { train: string[]; val: string[] } {
  const train = new Set(asList(config.data.train));
  const val = new Set(asList(config.data.val));
  for (const s of config.stages ?? []) {
    for (const p of asList(s.data.train)) train.add(p);
    for (const p of asList(s.data.val)) val.add(p);
  }
  return { train: [...train], val: [...val] };
}

/** The code files tool entries name: a Python tool's `path`, a tool module's `module`. */
export const toolCodeFiles = (specs: readonly ToolSpec[]): string[] =>
  specs.flatMap((s) => (s.path !== undefined ? [s.path] : s.kind === 'module' && s.module ? [s.module] : []));

/**
 * Every local file the config names (relative to the config file), by role. `toolsFile` reads the entries of
 * the tools `config_file` (a path relative to the config), so the code files it names are listed too.
 */
export function referencedFiles(
  config: RunConfig,
  toolsFile?: (path: string) => readonly ToolSpec[],
): {
  train: string[];
  val: string[];
  other: string[];
} {
  const { train, val } = datasetPaths(config);
  const file = config.tools.config_file;
  const other = [
    ...(config.trainer.sft ? [config.trainer.sft.data] : []),
    ...(config.trainer.sft?.ptx_data !== undefined ? [config.trainer.sft.ptx_data] : []),
    ...(config.stages ?? []).flatMap((st) => stageSftFiles(st)),
    ...(file ? [file] : []),
    ...toolCodeFiles(config.tools.tools ?? []),
    ...(file && toolsFile
      ? toolCodeFiles(toolsFile(file)).map((p) => (isAbsolute(p) ? p : join(dirname(file), p)))
      : []),
    ...config.reward.modules,
    ...config.reward.functions.flatMap((f) => (f.path !== undefined ? [f.path] : [])),
    ...(config.rollout.agent ? [config.rollout.agent.path] : []),
    ...promptTemplateFiles(config),
  ];
  return { train, val, other: [...new Set(other)] };
}

/**
 * The reward code of a config as the run uploaded it: each `reward.modules` entry and Python reward `path` by the
 * name it has under runs/<runId>/input/ (inputName), so a stage loading from the run's input files imports only
 * what the run's author uploaded. A path to anywhere else on the stage's machine (absolute, `../`) names nothing.
 */
export function rewardCodeFromUpload(config: RunConfig): RunConfig {
  return {
    ...config,
    reward: {
      ...config.reward,
      modules: config.reward.modules.map(inputName),
      functions: config.reward.functions.map((f) =>
        f.path === undefined ? f : { ...f, path: inputName(f.path) },
      ),
    },
  };
}

/**
 * The tool code of a resolved config as the run uploaded it: a Python tool's `path` and a tool module's `module` by
 * the name it has under runs/<runId>/input/ (inputName), as rewardCodeFromUpload does for reward code.
 */
export function toolCodeFromUpload(config: RunConfig): RunConfig {
  const tools = config.tools.tools;
  if (tools === undefined) return config;
  return {
    ...config,
    tools: {
      ...config.tools,
      tools: tools.map((t) => ({
        ...t,
        ...(t.path !== undefined ? { path: inputName(t.path) } : {}),
        ...(t.kind === 'module' && t.module !== undefined ? { module: inputName(t.module) } : {}),
      })),
    },
  };
}

type StageSft = { data?: unknown; ptx_data?: unknown };

/** A stage's own `trainer.sft` overrides, if any. */
const stageSft = (stage: NonNullable<RunConfig['stages']>[number]): StageSft | undefined =>
  (stage.overrides.trainer as { sft?: StageSft } | undefined)?.sft;

/** A stage's own SFT demonstrations (`overrides.trainer.sft.data`: a format stage's warm start; `ptx_data`). */
function stageSftFiles(stage: NonNullable<RunConfig['stages']>[number]): string[] {
  const sft = stageSft(stage);
  return [sft?.data, sft?.ptx_data].filter((p): p is string => typeof p === 'string');
}

/** `data.prompt_type` values (run and stages) that name a template file rather than a built-in. */
const promptTemplateFiles = (config: RunConfig): string[] => [
  ...new Set(
    [config.data.prompt_type, ...(config.stages ?? []).map((s) => s.data.prompt_type)].filter(
      (p): p is string => p !== undefined && looksLikePath(p),
    ),
  ),
];

/** The name a referenced file gets under `runs/<runId>/input/`; two files may not share one. */
export function inputName(path: string): string {
  return basename(path);
}

/** Checks that no two referenced files collide under the input prefix. */
export function checkInputNames(config: RunConfig, toolsFile?: (path: string) => readonly ToolSpec[]): void {
  const { train, val, other } = referencedFiles(config, toolsFile);
  const seen = new Map<string, string>();
  for (const p of [...train, ...val, ...other]) {
    const name = inputName(p);
    const prev = seen.get(name);
    if (prev !== undefined && prev !== p)
      throw new ConfigError(`${prev} and ${p} would both be uploaded as input/${name}; rename one of them`);
    if (name === 'config.yaml') throw new ConfigError(`${p}: a referenced file may not be named config.yaml`);
    seen.set(name, p);
  }
}

/**
 * The config as stored in run.json: data paths (train, val, per stage, SFT data, a stage's own SFT data) become blob keys of the run's
 * input prefix. Tool configs and reward modules keep their paths (resolved against the run's base folder).
 */
export function resolveRunConfig(config: RunConfig, runId: string): RunConfig {
  const key = (p: string) => `${keys.inputPrefix(runId)}${inputName(p)}`;
  // `data` and `ptx_data` of a trainer.sft (the run's, or a stage's partial overrides) as blob keys.
  const sftKeys = <T extends { data?: unknown; ptx_data?: unknown }>(sft: T): T => ({
    ...sft,
    ...(typeof sft.data === 'string' ? { data: key(sft.data) } : {}),
    ...(typeof sft.ptx_data === 'string' ? { ptx_data: key(sft.ptx_data) } : {}),
  });
  const mapPaths = <T extends string | string[] | undefined>(v: T): T =>
    (v === undefined ? v : Array.isArray(v) ? v.map(key) : key(v)) as T;
  return {
    ...config,
    data: { ...config.data, train: mapPaths(config.data.train), val: mapPaths(config.data.val) },
    trainer: {
      ...config.trainer,
      ...(config.trainer.sft ? { sft: sftKeys(config.trainer.sft) } : {}),
    },
    ...(config.stages
      ? {
          stages: config.stages.map((s) => {
            const sft = stageSft(s);
            const trainer = s.overrides.trainer as { sft: Record<string, unknown> } | undefined;
            return {
              ...s,
              data: { ...s.data, train: mapPaths(s.data.train), val: mapPaths(s.data.val) },
              ...(sft !== undefined && trainer
                ? {
                    overrides: {
                      ...s.overrides,
                      trainer: { ...trainer, sft: sftKeys(trainer.sft) },
                    },
                  }
                : {}),
            };
          }),
        }
      : {}),
  };
}
