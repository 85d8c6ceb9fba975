// Text helpers of the Python code generator (python.ts): Python literals, names, wrapped docstrings, JSON equality.

/** The line width ruff formats the generated files to. */
export const WIDTH = 110;
export const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(
    ' ',
  ),
);
export const pascal = (s: string): string =>
  s
    .split(/[_\-\s]+|(?=[A-Z])/)
    .filter(Boolean)
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join('');

/** A JSON value as a Python literal (arrays as tuples where `tuples`). */
export function pyLiteral(v: unknown, floatish = false, tuples = false): string {
  if (v === null) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'number') {
    if (Number.isInteger(v)) return floatish ? `${v}.0` : String(v);
    return Math.abs(v) < 1e-3 ? v.toExponential() : String(v); // 1e-6, not 0.000001
  }
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) {
    const items = v.map((x) => pyLiteral(x, false, tuples));
    if (!tuples) return `[${items.join(', ')}]`;
    return items.length === 1 ? `(${items[0]},)` : `(${items.join(', ')})`;
  }
  const entries = Object.entries(v as Record<string, unknown>).map(
    ([k, x]) => `${JSON.stringify(k)}: ${pyLiteral(x, false, tuples)}`,
  );
  return `{${entries.join(', ')}}`;
}

/** Words of `text` in lines of at most `width` characters, each prefixed by `prefix`. */
export function wrap(text: string, width: number, prefix = ''): string[] {
  const out: string[] = [];
  for (const para of text.split('\n')) {
    let line = '';
    for (const word of para.split(/\s+/).filter(Boolean)) {
      if (line && prefix.length + line.length + 1 + word.length > width) {
        out.push(prefix + line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    out.push((prefix + line).trimEnd());
  }
  return out;
}

/** A docstring at `indent`: one line when it fits, else wrapped with the closing quotes on their own line. */
export function docstring(text: string, indent: string): string[] {
  let body = text.replace(/\\/g, '\\\\').replace(/"""/g, '\\"\\"\\"').trim();
  if (body.endsWith('"')) body = `${body.slice(0, -1)}\\"`;
  const one = `${indent}"""${body}"""`;
  if (!body.includes('\n') && one.length <= WIDTH) return [one];
  const lines = wrap(body, WIDTH, indent);
  if (lines.length === 1) return [one]; // ruff keeps a one-line docstring on one line, however long
  lines[0] = `${indent}"""${lines[0]?.slice(indent.length)}`;
  return [...lines.map((l) => l.trimEnd()), `${indent}"""`];
}

/** JSON equality regardless of key order. */
export function sameJson(a: unknown, b: unknown): boolean {
  const canon = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, canon((v as Record<string, unknown>)[k])]),
        )
      : Array.isArray(v)
        ? v.map(canon)
        : v;
  return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}
