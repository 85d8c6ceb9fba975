// Every built-in tool kind, the names that select it, and the tool set used when no config is given.
import { TOOL_CLASS_ALIASES, toolClassAlias } from '#shared/schemas/config/aliases';
import type { ToolSpec } from '#shared/schemas/config/tools';
import { bfclKind } from './bfcl/tool.ts';
import { calculatorKind } from './calculator/tool.ts';
import { codeInterpreterKind } from './code/tool.ts';
import { httpKind } from './http/tool.ts';
import type { ToolKind } from './kind.ts';
import { searchKind } from './search/tool.ts';
import { timeKind } from './time/tool.ts';
import { toolbenchKind } from './toolbench/tool.ts';
import { weatherKind } from './weather/tool.ts';

export const TOOL_KINDS: ToolKind[] = [
  calculatorKind,
  timeKind,
  weatherKind,
  searchKind,
  codeInterpreterKind,
  toolbenchKind,
  httpKind,
  bfclKind,
] as ToolKind[];

export interface ResolvedKind {
  kind: ToolKind;
  /** Config the name implies (MindSpeed-RL's ReTool class: the code interpreter with ReTool's preprocessing). */
  preset: Readonly<Record<string, unknown>>;
}

/**
 * The built-in kind a tool's `kind:` or `class_name:` names: a kind's own name (`code_interpreter`), or a class
 * of another system listed in the alias table (`mindspeed_rl.tools.retool.ReTool`). The one place a tool name is
 * looked up: a class name found nowhere here is an error.
 */
export function resolveToolKind(name: string): ResolvedKind {
  const own = TOOL_KINDS.find((k) => k.kind === name);
  if (own) return { kind: own, preset: {} };
  const alias = toolClassAlias(name);
  const aliased = alias && TOOL_KINDS.find((k) => k.kind === alias.kind);
  if (alias && aliased) return { kind: aliased, preset: alias.config ?? {} };
  throw new Error(
    `unknown tool kind "${name}": not a built-in kind (${TOOL_KINDS.map((k) => k.kind).join(', ')}) nor a tool class toolrl knows (${TOOL_CLASS_ALIASES.filter(
      (a) => a.from.includes('.'),
    )
      .map((a) => a.from)
      .join(', ')})`,
  );
}

export const resolveKind = (name: string): ToolKind => resolveToolKind(name).kind;

/** With no tool config: calculator, time, weather, search over the shipped corpus, the built-in sandbox. */
export const DEFAULT_TOOL_SPECS: ToolSpec[] = [
  'calculator',
  'get_current_time',
  'weather_query',
  'search',
  'code_interpreter',
].map((kind) => ({ kind, config: {} }));
