// Every built-in tool kind, the names that select it, and the tool set used when no config is given.
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

/** `calculator`, or a dotted class name whose last segment is a known alias (verl's `...SandboxFusionTool`). */
export function resolveKind(name: string): ToolKind {
  const last = name.split('.').pop() ?? name;
  const kind = TOOL_KINDS.find((k) => k.kind === name || k.kind === last || k.aliases.includes(last));
  if (!kind)
    throw new Error(`unknown tool kind "${name}"; known kinds: ${TOOL_KINDS.map((k) => k.kind).join(', ')}`);
  return kind;
}

/** With no tool config: calculator, time, weather, search over the shipped corpus, the built-in sandbox. */
export const DEFAULT_TOOL_SPECS: ToolSpec[] = [
  'calculator',
  'get_current_time',
  'weather_query',
  'search',
  'code_interpreter',
].map((kind) => ({ kind, config: {} }));
