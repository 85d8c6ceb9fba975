// `{name}` templates for the keys and ids both languages build: the template string is the one definition.
// TypeScript fills them here; the learner fills the same strings (generated into json/constants.json) with
// Python's str.format, which reads the same placeholders.

export type TemplateValues = Readonly<Record<string, string | number>>;

const PLACEHOLDER = /\{(\w+)\}/g;

/** The template with every `{name}` replaced; a placeholder without a value is a programming error. */
export function fill(template: string, values: TemplateValues): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    const v = values[name];
    if (v === undefined) throw new Error(`template ${template}: no value for {${name}}`);
    return String(v);
  });
}

/** The placeholders of a template, in order. */
export const placeholders = (template: string): string[] =>
  [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);

/**
 * A RegExp for whole strings `fill` makes of the template, each placeholder a named group; `parts` gives a
 * placeholder's own pattern (default: one or more characters other than `/`).
 */
export function templatePattern(template: string, parts: Readonly<Record<string, string>> = {}): RegExp {
  const escaped = template
    .split(PLACEHOLDER)
    .map((piece, i) =>
      i % 2 === 1 ? `(?<${piece}>${parts[piece] ?? '[^/]+?'})` : piece.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    );
  return new RegExp(`^${escaped.join('')}$`);
}

/**
 * The template up to the folder that holds `{placeholder}`'s segment (without one: the folder that holds the
 * key; a folder template is its own), ending in `/`: the prefix of every key of that kind, e.g.
 * `runs/{runId}/groups/` for `group`.
 */
export function folderOf(template: string, placeholder?: string): string {
  const at = placeholder === undefined ? template.length : template.indexOf(`{${placeholder}}`);
  if (at < 0) throw new Error(`template ${template} has no {${placeholder}}`);
  const slash = template.lastIndexOf('/', at - 1);
  if (slash < 0) throw new Error(`template ${template}: no folder above {${placeholder}}`);
  return template.slice(0, slash + 1);
}

/**
 * The IAM/S3 wildcard pattern for every key `fill` makes of the template: each placeholder becomes `*`, and a
 * folder template (ending in `/`) covers everything under it. IAM's `*` also spans `/`, so a pattern never
 * misses a key of its template, whatever the placeholders' values.
 */
export const keyWildcard = (template: string): string =>
  template.replace(PLACEHOLDER, '*') + (template.endsWith('/') ? '*' : '');
