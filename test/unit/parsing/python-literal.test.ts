// The one Python-literal reader, shared by the ToolBench converter (ToolLLaMA API lists are str(list_of_dicts))
// and the StableToolBench cache server (keys are str(tool_input)); expected values are what Python's
// ast.literal_eval returns for the same text.
import { describe, expect, it } from 'vitest';
import { MAX_LITERAL_DEPTH, PythonLiteralError, parsePythonLiteral } from '#shared/parsing/python-literal';

describe('parsePythonLiteral (ToolLLaMA API lists are str(list_of_dicts))', () => {
  it('reads dicts, lists, tuples, both quote styles, escapes, numbers and constants', () => {
    expect(
      parsePythonLiteral(
        `[{'name': 'a', "d": "it's", 'n': -1.5e3, 'ok': True, 'no': False, 'x': None, 't': (1, 2,), 'u': '\\u00e9\\n\\'q\\''}]`,
      ),
    ).toEqual([{ name: 'a', d: "it's", n: -1500, ok: true, no: false, x: null, t: [1, 2], u: "é\n'q'" }]);
  });

  it('says where the text stops being a literal', () => {
    expect(() => parsePythonLiteral("[{'a': 1}")).toThrow(/expected "," or "\]" at character 9/);
    expect(() => parsePythonLiteral("{'a': nan}")).toThrow(/expected a Python literal at character 6/);
    expect(() => parsePythonLiteral('[1] extra')).toThrow(/unexpected text after the literal/);
  });
});

describe('parsePythonLiteral escapes and edge cases', () => {
  it("reads every escape Python does and keeps an unknown escape's backslash", () => {
    // ast.literal_eval(r"'\b\f\v\a\q\0\012\x41\d'") == '\x08\x0c\x0b\x07\\q\x00\nA\\d'
    expect(parsePythonLiteral(String.raw`'\b\f\v\a\q\0\012\x41\d'`)).toBe('\b\f\v\x07\\q\0\nA\\d');
    // str({'a': '\b\f\v\x07\\q'}) as Python prints it
    expect(parsePythonLiteral(String.raw`{'a': '\x08\x0c\x0b\x07\\q'}`)).toEqual({ a: '\b\f\v\x07\\q' });
    expect(parsePythonLiteral(String.raw`'\U0001F600 \u00e9'`)).toBe('\u{1F600} é');
    expect(() => parsePythonLiteral(String.raw`'\U00110000'`)).toThrow(/bad \\U escape/);
    expect(() => parsePythonLiteral(String.raw`'\x4'`)).toThrow(/bad \\x escape/);
  });

  it('keeps a "__proto__" key as data', () => {
    const v = parsePythonLiteral("{'__proto__': [1.5, None]}") as Record<string, unknown>;
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
    expect(Object.keys(v)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyDescriptor(v, '__proto__')?.value).toEqual([1.5, null]);
  });

  it('reads numbers as Python writes them and refuses what JSON cannot hold', () => {
    expect(parsePythonLiteral('[-.5, 1_000, 1e+16, 1., +2]')).toEqual([-0.5, 1000, 1e16, 1, 2]);
    expect(() => parsePythonLiteral('[.]')).toThrow(/bad number at character 1/);
    expect(() => parsePythonLiteral('-')).toThrow(/bad number/);
    // str(float('inf')) and str(float('nan')): no JSON value; as null they would match a None key
    expect(() => parsePythonLiteral("{'x': inf}")).toThrow(PythonLiteralError);
    expect(() => parsePythonLiteral("{'x': -inf}")).toThrow(/bad number/);
  });

  it('refuses nesting deeper than MAX_LITERAL_DEPTH instead of overflowing the stack', () => {
    const ok = `${'['.repeat(MAX_LITERAL_DEPTH)}${']'.repeat(MAX_LITERAL_DEPTH)}`;
    expect(() => parsePythonLiteral(ok)).not.toThrow();
    expect(() => parsePythonLiteral('['.repeat(100_000))).toThrow(/nested deeper than 256/);
  });
});
