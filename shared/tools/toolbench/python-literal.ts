// StableToolBench keys its cache by Python's `str(tool_input)` (a dict repr). This writes that repr
// for JSON values and reads Python literals back, so lookups match keys written by Python.

export function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return pythonNumber(value);
  if (typeof value === 'string') return pythonString(value);
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(', ')}]`;
  if (typeof value === 'object')
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `${pythonString(k)}: ${pythonRepr(v)}`)
      .join(', ')}}`;
  return pythonString(String(value));
}

function pythonNumber(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return String(x);
  // Same shortest digits as Python's repr; Python switches to exponent form outside [1e-4, 1e16).
  const [mantissa, exp] = x.toExponential().split('e') as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 16) return `${mantissa}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  const s = String(x);
  return s.includes('.') || s.includes('e') ? s : `${s}.0`;
}

function pythonString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\\') out += '\\\\';
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (ch !== ' ' && /[\p{C}\p{Z}]/u.test(ch))
      out +=
        cp <= 0xffff ? `\\u${cp.toString(16).padStart(4, '0')}` : `\\U${cp.toString(16).padStart(8, '0')}`;
    else out += ch;
  }
  return out + quote;
}

/** Parses a Python literal (dict, list, tuple, str, int, float, True/False/None); throws on anything else. */
export function parsePythonLiteral(text: string): unknown {
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++;
  };
  const fail = (what: string): never => {
    throw new Error(`not a Python literal at ${i}: ${what}`);
  };
  const value = (): unknown => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++;
      const obj: Record<string, unknown> = {};
      ws();
      while (text[i] !== '}') {
        const k = value();
        ws();
        if (text[i++] !== ':') fail('expected :');
        obj[String(k)] = value();
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== '}') fail('expected , or }');
        ws();
      }
      i++;
      return obj;
    }
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')';
      i++;
      const arr: unknown[] = [];
      ws();
      while (text[i] !== close) {
        arr.push(value());
        ws();
        if (text[i] === ',') i++;
        else if (text[i] !== close) fail(`expected , or ${close}`);
        ws();
      }
      i++;
      return arr;
    }
    if (c === "'" || c === '"') return str(c);
    const m = /^(True|False|None|-?inf|nan|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)/.exec(text.slice(i));
    if (!m) return fail('unexpected character');
    i += m[0].length;
    const t = m[0];
    if (t === 'True') return true;
    if (t === 'False') return false;
    if (t === 'None') return null;
    return Number(t.replace('inf', 'Infinity').replace('nan', 'NaN'));
  };
  const str = (q: string): string => {
    i++;
    let out = '';
    while (i < text.length && text[i] !== q) {
      const c = text[i++]!;
      if (c !== '\\') {
        out += c;
        continue;
      }
      const e = text[i++];
      const hex = (n: number) => {
        const cp = Number.parseInt(text.slice(i, i + n), 16);
        i += n;
        return String.fromCodePoint(cp);
      };
      if (e === 'n') out += '\n';
      else if (e === 'r') out += '\r';
      else if (e === 't') out += '\t';
      else if (e === 'x') out += hex(2);
      else if (e === 'u') out += hex(4);
      else if (e === 'U') out += hex(8);
      else out += e ?? '';
    }
    if (text[i] !== q) fail('unterminated string');
    i++;
    return out;
  };
  const v = value();
  ws();
  if (i !== text.length) fail('trailing text');
  return v;
}

/** Key-order-independent comparison form: JSON with sorted keys. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value);
}
