// StableToolBench's API naming and schemas, so per-row tools match what its server and the ToolBench
// evaluation expect: a function `<api>_for_<tool>` (standardised names, the last 64 characters), RapidAPI
// parameter types mapped to JSON Schema and `required`/`optional` lists (the `Finish` function every ToolBench
// episode ends with is `FINISH_SCHEMA` in `tools/toolbench/finish.ts`).

import type { ToolSchema } from '#shared/schemas/chat';

const DESCRIPTION_MAX = 256;
const NAME_MAX = 64;
const RESERVED_PARAM_NAMES = new Set(['from', 'class', 'return', 'false', 'true', 'id', 'and']);
const RAPIDAPI_TYPES: Record<string, string> = { NUMBER: 'integer', STRING: 'string', BOOLEAN: 'boolean' };

/** ToolBench's `standardize`: other characters than [A-Za-z0-9_^] and CJK become `_`, runs collapsed, trimmed, lower-cased. */
export function standardizeName(name: string): string {
  let s = name
    .replace(/[^\u4e00-\u9fa5^a-zA-Z0-9_]/g, '_')
    .replace(/_+/g, '_')
    .toLowerCase()
    .replace(/^_+|_+$/g, '');
  if (/^[0-9]/.test(s)) s = `get_${s}`;
  return s;
}

/** ToolBench's `change_name`: parameter names that are Python keywords get an `is_` prefix. */
export const changeName = (name: string): string => (RESERVED_PARAM_NAMES.has(name) ? `is_${name}` : name);

/** One `api_list` entry of a StableToolBench query. */
export interface RapidApi {
  category_name: string;
  tool_name: string;
  api_name: string;
  api_description?: string;
  required_parameters?: { name: string; type?: string; description?: string; default?: unknown }[];
  optional_parameters?: { name: string; type?: string; description?: string; default?: unknown }[];
}

/** Where a function call goes on a StableToolBench server (`/virtual` takes category, tool_name, api_name). */
export interface ApiRoute {
  name: string;
  category_name: string;
  tool_name: string;
  api_name: string;
}

/** The callable name of an API: `<api>_for_<tool>`, keeping the last 64 characters (the tool suffix disambiguates). */
export function apiFunctionName(apiName: string, toolName: string): string {
  return `${changeName(standardizeName(apiName))}_for_${standardizeName(toolName)}`.slice(-NAME_MAX);
}

export function rapidApiToTool(api: RapidApi): { tool: ToolSchema; route: ApiRoute } {
  const tool = standardizeName(api.tool_name);
  const name = apiFunctionName(api.api_name, api.tool_name);
  let description = `This is the subfunction for tool "${tool}", you can use this tool.`;
  const own = (api.api_description ?? '').trim();
  if (own) {
    description += `The description of this function is: "${own.replaceAll(api.api_name, name).slice(0, DESCRIPTION_MAX)}"`;
  }
  const properties: Record<string, unknown> = {};
  const required: string[] = [];
  const optional: string[] = [];
  for (const [list, params] of [
    [required, api.required_parameters ?? []],
    [optional, api.optional_parameters ?? []],
  ] as const) {
    for (const p of params) {
      const pname = changeName(standardizeName(p.name));
      const prop: Record<string, unknown> = {
        type: RAPIDAPI_TYPES[p.type ?? ''] ?? 'string',
        description: (p.description ?? '').slice(0, DESCRIPTION_MAX),
      };
      if (p.default !== undefined && p.default !== null && String(p.default) !== '')
        prop.example_value = p.default;
      properties[pname] = prop;
      list.push(pname);
    }
  }
  return {
    tool: {
      type: 'function',
      function: { name, description, parameters: { type: 'object', properties, required, optional } },
    },
    route: {
      name,
      category_name: api.category_name,
      tool_name: tool,
      api_name: changeName(standardizeName(api.api_name)),
    },
  };
}
