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
