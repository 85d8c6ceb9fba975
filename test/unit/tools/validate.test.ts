import { describe, expect, it } from 'vitest';
import {
  compileArgumentValidator,
  decodeArguments,
  MAX_SCHEMA_DEPTH,
  sanitizeSchema,
} from '#shared/tools/validate';

const schema = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
  required: ['city'],
  additionalProperties: false,
};

describe('argument validation', () => {
  const validate = compileArgumentValidator('weather', schema);

  it('accepts an object or a JSON string of one', () => {
    expect(validate({ city: 'Paris' })).toEqual({ city: 'Paris' });
    expect(validate('{"city": "Oslo", "days": 2}')).toEqual({ city: 'Oslo', days: 2 });
  });

  it('names what is wrong', () => {
    expect(() => validate({})).toThrow('weather: missing required argument "city"');
    expect(() => validate({ city: 'x', extra: 1 })).toThrow('unexpected argument "extra"');
    expect(() => validate({ city: 'x', days: 0 })).toThrow('argument days must be >= 1');
    expect(() => validate('{"city": ')).toThrow(/not valid JSON/);
    expect(() => validate('[1]')).toThrow('arguments must be a JSON object, got an array');
  });

  it('refuses oversized arguments before parsing them', () => {
    expect(() => decodeArguments(`"${'x'.repeat(300_000)}"`)).toThrow(/bytes/);
  });

  it('hardens schemas from data: no user regexes, ToolBench type names, bounded size and depth', () => {
    const toolbench = {
      type: 'object',
      properties: { q: { type: 'STRING', pattern: '(a+)+$', example_value: 'x' }, n: { type: 'NUMBER' } },
      required: ['q'],
      optional: ['n'],
    };
    expect(sanitizeSchema(toolbench)).toEqual({
      type: 'object',
      properties: { q: { type: 'string', example_value: 'x' }, n: { type: 'number' } },
      required: ['q'],
      optional: ['n'],
    });
    // The catastrophic-backtracking pattern is gone, so this returns at once.
    const v = compileArgumentValidator('tb', toolbench);
    expect(v({ q: `${'a'.repeat(50)}!`, n: 3 })).toBeTruthy();
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < MAX_SCHEMA_DEPTH; i++) deep = { type: 'object', properties: { x: deep } };
    expect(() => compileArgumentValidator('deep', deep)).toThrow(/nests deeper/);
    expect(() =>
      compileArgumentValidator('big', { type: 'object', description: 'x'.repeat(70_000) }),
    ).toThrow(/bytes/);
    expect(() =>
      compileArgumentValidator('data', { type: 'object', properties: { a: { $data: '1/b' } } }),
    ).not.toThrow();
  });

  it('fails at build time on a schema Ajv cannot compile', () => {
    expect(() => compileArgumentValidator('bad', { type: 'object', required: 'city', minimum: 'x' })).toThrow(
      /tool bad: invalid parameters schema/,
    );
  });
});
