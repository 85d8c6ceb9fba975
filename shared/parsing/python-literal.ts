// Parses a Python literal (what `str(obj)` prints for dicts, lists, tuples, strings, numbers, True, False,
// None) into JSON values. ToolLLaMA's training data embeds its API list this way in the system prompt
// (`... the following APIs: [{'name': ..., 'parameters': {...}}]`) and StableToolBench keys its response cache
// by `str(tool_input)`; JSON.parse reads neither. Hand-written because the only npm options evaluate code or
// parse a different grammar (Python source, not repr). `nan` and `inf` are refused: JSON has no such values,
// and reading them as null would make a cache key match an input it was not written for.

export class PythonLiteralError extends Error {
  override name = 'PythonLiteralError';
}

const ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  b: '\b',
  f: '\f',
  v: '\v',
  a: '\x07',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '\n': '',
};

/** Deeper nesting is refused with a PythonLiteralError rather than overflowing the stack. */
export const MAX_LITERAL_DEPTH = 256;

class Parser {
  pos = 0;
  depth = 0;
  constructor(readonly text: string) {}

  fail(what: string): never {
    const near = this.text.slice(this.pos, this.pos + 30);
    throw new PythonLiteralError(
      `not a Python literal: ${what} at character ${this.pos} (near ${JSON.stringify(near)})`,
    );
  }

  skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  value(): unknown {
    this.skipSpace();
    const c = this.text[this.pos];
    if (c === undefined) this.fail('unexpected end of input');
    if (c === '{') return this.dict();
    if (c === '[') return this.sequence('[', ']');
    if (c === '(') return this.sequence('(', ')');
    if (c === "'" || c === '"') return this.string();
    if (/[-+0-9.]/.test(c)) return this.number();
    for (const [word, v] of [
      ['True', true],
      ['False', false],
      ['None', null],
    ] as const) {
      if (this.text.startsWith(word, this.pos)) {
        this.pos += word.length;
        return v;
      }
    }
    return this.fail('expected a Python literal');
  }

  expect(ch: string): void {
    this.skipSpace();
    if (this.text[this.pos] !== ch) this.fail(`expected ${JSON.stringify(ch)}`);
    this.pos++;
  }

  /** Items up to `close`, with Python's optional trailing comma. */
  items<T>(close: string, item: () => T): T[] {
    if (++this.depth > MAX_LITERAL_DEPTH) this.fail(`nested deeper than ${MAX_LITERAL_DEPTH}`);
    const out: T[] = [];
    this.skipSpace();
    while (this.text[this.pos] !== close) {
      out.push(item());
      this.skipSpace();
      if (this.text[this.pos] === ',') {
        this.pos++;
        this.skipSpace();
      } else if (this.text[this.pos] !== close) {
        this.fail(`expected "," or ${JSON.stringify(close)}`);
      }
    }
    this.pos++;
    this.depth--;
    return out;
  }

  dict(): Record<string, unknown> {
    this.pos++;
    const entries = this.items('}', () => {
      const key = this.value();
      this.expect(':');
      return [String(key), this.value()] as const;
    });
    return Object.fromEntries(entries);
  }

  sequence(open: string, close: string): unknown[] {
    if (this.text[this.pos] !== open) this.fail(`expected ${open}`);
    this.pos++;
    return this.items(close, () => this.value());
  }

  string(): string {
    const quote = this.text[this.pos]!;
    this.pos++;
    let out = '';
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) this.fail('unterminated string');
      this.pos++;
      if (c === quote) return out;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = this.text[this.pos++];
      if (e === undefined) this.fail('unterminated string');
      if (/[0-7]/.test(e)) {
        // Octal: up to three digits (`\0`, `\012`)
        const oct = /^[0-7]{1,3}/.exec(this.text.slice(this.pos - 1))![0];
        out += String.fromCodePoint(Number.parseInt(oct, 8));
        this.pos += oct.length - 1;
      } else if (Object.hasOwn(ESCAPES, e)) out += ESCAPES[e];
      else if (e === 'x' || e === 'u' || e === 'U') {
        const n = e === 'x' ? 2 : e === 'u' ? 4 : 8;
        const hex = this.text.slice(this.pos, this.pos + n);
        const cp = Number.parseInt(hex, 16);
        if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n || cp > 0x10ffff) this.fail(`bad \\${e} escape`);
        out += String.fromCodePoint(cp);
        this.pos += n;
      } else out += `\\${e}`; // Python keeps unknown escapes as written
    }
  }

  number(): number {
    // At least one digit before or after the point: a lone "." or "-" is not a number.
    const m = /^[-+]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][-+]?\d+)?/.exec(this.text.slice(this.pos));
    if (!m) this.fail('bad number');
    this.pos += m[0].length;
    return Number(m[0].replaceAll('_', ''));
  }
}

/** The JSON value of a Python literal; a PythonLiteralError says where the text stops being one. */
export function parsePythonLiteral(text: string): unknown {
  const p = new Parser(text);
  const v = p.value();
  p.skipSpace();
  if (p.pos !== text.length) p.fail('unexpected text after the literal');
  return v;
}
