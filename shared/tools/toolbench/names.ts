// ToolBench's name normalisation, which StableToolBench's server applies to find a cached response:
// API and tool names become lower snake case, categories lose spaces, commas and slashes.

/** Lower snake case, only [a-z0-9_^] and CJK kept (ToolBench's regex keeps `^`), no leading/trailing `_`, `get_` before a leading digit. */
export function standardize(name: string): string {
  let s = name
    .replace(/[^\u4e00-\u9fa5a-zA-Z0-9_^]/g, '_')
    .replace(/_+/g, '_')
    .toLowerCase()
    .replace(/^_+|_+$/g, '');
  if (/^[0-9]/.test(s)) s = `get_${s}`;
  return s;
}

/** API names that are Python keywords or builtins get an `is_` prefix (ToolBench generated them as modules). */
export function changeName(name: string): string {
  return ['from', 'class', 'return', 'false', 'true', 'id', 'and'].includes(name) ? `is_${name}` : name;
}

export function standardizeCategory(category: string): string {
  let s = category.replace(/[ ,/]/g, '_');
  s = s.replace(/__/g, '_');
  return s;
}

/** The function name a model sees for an API: `{api}_for_{tool}` (ToolBench's convention). */
export function functionName(toolName: string, apiName: string): string {
  return `${changeName(standardize(apiName))}_for_${standardize(toolName)}`.slice(0, 64);
}

/** Splits `{api}_for_{tool}` back (at the last `_for_`); a name without it is an API of an unnamed tool. */
export function splitFunctionName(name: string): { toolName: string; apiName: string } {
  const i = name.lastIndexOf('_for_');
  return i <= 0
    ? { toolName: name, apiName: name }
    : { toolName: name.slice(i + 5), apiName: name.slice(0, i) };
}

/** Where StableToolBench keeps one API's cache: `{category}/{tool}_for_{category}/{api}.json`. */
export function cachePath(category: string, toolName: string, apiName: string): string[] {
  const cat = standardizeCategory(category);
  const tool = toolName.endsWith(`_for_${cat}`) ? toolName : `${standardize(toolName)}_for_${cat}`;
  const api = changeName(standardize(apiName)).split(`_for_${toolName}`)[0]!;
  return [cat, tool, `${api}.json`];
}
