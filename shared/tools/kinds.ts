// Every built-in tool kind, the names that select it, and the tool set used when no config is given.
import type { ToolSpec } from '#shared/schemas/config/tools';
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
] as ToolKind[];

/**
 * Adds a kind that lives above tools/ (the BFCL slice, shared/bfcl/register.ts) to the built-ins; a second call
 * with the same kind is a no-op, so importing the registering module twice is harmless.
 */
export function registerToolKind(kind: ToolKind): void {
  if (!TOOL_KINDS.includes(kind)) TOOL_KINDS.push(kind);
}

export interface ResolvedKind {
  kind: ToolKind;
}

/** A dotted class name no built-in claims: a Python class the tool host imports. */
export interface PythonClassName {
  kind: undefined;
  pythonClass: string;
}

/**
 * The one place a tool name is looked up. A kind's own name (`code_interpreter`) is a built-in kind (another system's
 * class for one, `mindspeed_rl.tools.retool.ReTool`, was made that kind when the config was read: shared/config).
 * With `pythonClasses` (a tool entry's `class_name`), any other dotted name is a Python class for the tool host; any
 * other name is an error naming the known kinds.
 */
export function resolveToolKind(name: string): ResolvedKind;
export function resolveToolKind(
  name: string,
  opts: { pythonClasses: boolean },
): ResolvedKind | PythonClassName;
export function resolveToolKind(
  name: string,
  opts: { pythonClasses: boolean } = { pythonClasses: false },
): ResolvedKind | PythonClassName {
  const own = TOOL_KINDS.find((k) => k.kind === name);
  if (own) return { kind: own };
  if (opts.pythonClasses && name.includes('.')) return { kind: undefined, pythonClass: name };
  throw new Error(
    `unknown tool kind "${name}": not a built-in kind (${TOOL_KINDS.map((k) => k.kind).join(', ')})` +
      (opts.pythonClasses
        ? '; a Python class is `class_name: my_pkg.module.MyTool` or `path: my_tool.py` + `name: MyTool`, ' +
          'a TypeScript tool `kind: module` + `module: ./my-tool.ts`'
        : ''),
  );
}

export const resolveKind = (name: string): ToolKind => resolveToolKind(name).kind;

/** Where a tool config entry's code comes from. */
export type ToolSource =
  | { type: 'builtin'; kind: ToolKind }
  | { type: 'python'; label: string }
  | { type: 'module'; module: string };

/**
 * A TypeScript module for `kind: module`; a Python class for `path` + `name`; otherwise what resolveToolKind makes
 * of the entry's `kind` (built-ins only) or `class_name` (built-ins, then any other dotted name as a Python class).
 */
export function toolSource(spec: ToolSpec): ToolSource {
  if (spec.kind === 'module' && spec.module) return { type: 'module', module: spec.module };
  if (spec.path !== undefined) return { type: 'python', label: `${spec.name} from ${spec.path}` };
  const byClass = spec.kind === undefined && spec.class_name !== undefined;
  const resolved = resolveToolKind(spec.kind ?? spec.class_name ?? '', { pythonClasses: byClass });
  if (resolved.kind === undefined) return { type: 'python', label: resolved.pythonClass };
  return { type: 'builtin', kind: resolved.kind };
}

/** With no tool config: calculator, time, weather, search over the shipped corpus, the built-in sandbox. */
export const DEFAULT_TOOL_SPECS: ToolSpec[] = [
  'calculator',
  'get_current_time',
  'weather_query',
  'search',
  'code_interpreter',
].map((kind) => ({ kind, config: {} }));
