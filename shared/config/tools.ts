// Tool entries in toolrl's names: a tool class (or kind) another system names becomes the built-in kind it is, with
// the config the class implies, and a kind's config keys spelled another way become the kind's own. A run's tools file
// (`tools.config_file`, a verl / MindSpeed-RL tool-config file) is read here and its entries inlined, their relative
// code paths made relative to the run config's folder, so the tool registry only ever sees toolrl's names.
import { dirname, isAbsolute, join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ToolConfigFileSchema, type ToolSpec, type ToolsConfig } from '#shared/schemas/config/tools';
import { TOOL_CLASS_ALIASES, TOOL_CONFIG_ALIASES, toolClassAlias } from './aliases.ts';

/** A tools file or entry that cannot be read, or that sets one key under two names. */
export class ToolConfigError extends Error {
  override name = 'ToolConfigError';
}

/** The kind's own config keys for those another system spells differently (the ToolBench seed's `toolbench_url`). */
function kindConfig(kind: string, config: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    const alias = TOOL_CONFIG_ALIASES.find((a) => a.kind === kind && a.from === k);
    if (!alias) {
      if (k in out)
        throw new ToolConfigError(
          `tool ${kind}: bad config: ${k} is set twice (once under another system's name)`,
        );
      out[k] = v;
      continue;
    }
    if (alias.to === null) continue;
    if (alias.to in out || alias.to in config)
      throw new ToolConfigError(
        `tool ${kind}: bad config: ${k} (${alias.origin}'s name for ${alias.to}) and ${alias.to} are both set`,
      );
    out[alias.to] = alias.value ? alias.value(v) : v;
  }
  return out;
}

/**
 * One tool entry in toolrl's names. `kind` or `class_name` naming a class of the alias table
 * (`mindspeed_rl.tools.retool.ReTool`) becomes `kind: <built-in>` with the config the class implies under the entry's
 * own (the entry wins where both set a key); any other name is left as written (a kind, or a Python class by dotted
 * path, which the tool registry tells apart).
 */
export function resolveToolSpec(spec: ToolSpec): ToolSpec {
  if (spec.path !== undefined || spec.kind === 'module') return spec;
  const named = spec.kind ?? spec.class_name;
  const alias = named === undefined ? undefined : toolClassAlias(named);
  if (!alias) return spec.kind === undefined ? spec : { ...spec, config: kindConfig(spec.kind, spec.config) };
  const { class_name: _, ...rest } = spec;
  return { ...rest, kind: alias.kind, config: kindConfig(alias.kind, { ...alias.config, ...spec.config }) };
}

export const resolveToolSpecs = (specs: readonly ToolSpec[]): ToolSpec[] => specs.map(resolveToolSpec);

/** The tool classes of other systems the table knows, for messages (`mindspeed_rl.tools.retool.ReTool`, ...). */
export const knownToolClasses = (): string[] =>
  TOOL_CLASS_ALIASES.filter((a) => a.from.includes('.')).map((a) => a.from);

/** A tools file's text (YAML or JSON) as its entries in toolrl's names; `name` says which file in errors. */
export function readToolsFile(text: string, name: string): ToolSpec[] {
  let raw: unknown;
  try {
    raw = name.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ToolConfigError(
      `${name} is not valid ${name.endsWith('.json') ? 'JSON' : 'YAML'}: ${(err as Error).message}`,
    );
  }
  const parsed = ToolConfigFileSchema.safeParse(raw);
  if (!parsed.success)
    throw new ToolConfigError(`tool config_file ${name}: ${z.prettifyError(parsed.error)}`);
  return resolveToolSpecs(parsed.data.tools);
}

/**
 * The run's `tools:` as the stages use them: inline entries in toolrl's names, or the entries of `config_file` (its
 * text given by `toolsFile`) inlined, a relative code path (`path`, `module`) made relative to the config's folder.
 */
export function resolveRunTools(tools: ToolsConfig, toolsFile?: string): ToolsConfig {
  const { config_file, ...rest } = tools;
  if (config_file === undefined)
    return tools.tools === undefined ? tools : { ...rest, tools: resolveToolSpecs(tools.tools) };
  if (toolsFile === undefined)
    throw new ToolConfigError(`tools.config_file ${config_file} was not found with the run's inputs`);
  const folder = dirname(config_file);
  const rebase = (p: string | undefined) => (p === undefined || isAbsolute(p) ? p : join(folder, p));
  const specs = readToolsFile(toolsFile, config_file).map((s) => {
    const path = rebase(s.path);
    const module = rebase(s.module);
    return { ...s, ...(path !== undefined ? { path } : {}), ...(module !== undefined ? { module } : {}) };
  });
  return { ...rest, tools: specs };
}
