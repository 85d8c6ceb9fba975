import { describe, expect, it } from 'vitest';
import { MAX_ARGUMENT_DEPTH } from '#shared/parsing/depth';
import {
  compileArgumentValidator,
  decodeArguments,
  MAX_SCHEMA_DEPTH,
  MAX_SCHEMA_NODES,
  sanitizeSchema,
  VALIDATOR_CACHE_SIZE,
  validatorCacheStats,
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

describe('bounded validation of schemas and arguments from data', () => {
  it('compiles each distinct schema once and holds a bounded number of validators', () => {
    // What a ToolBench run does: every row brings its APIs' schemas again (5 per row here).
    const schemas = Array.from({ length: 5 }, (_, i) => ({
      type: 'object',
      properties: { [`q${i}`]: { type: 'string' } },
      required: [`q${i}`],
    }));
    const before = validatorCacheStats();
    for (let row = 0; row < 500; row++) {
      for (const [i, s] of schemas.entries()) {
        const v = compileArgumentValidator(`api_${i}`, structuredClone(s));
        expect(v({ [`q${i}`]: 'x' })).toEqual({ [`q${i}`]: 'x' });
      }
    }
    const after = validatorCacheStats();
    expect(after.compilations - before.compilations).toBeLessThanOrEqual(5);
    // Ajv's own schema map does not grow with the calls (it kept every compiled schema before)
    expect(after.ajvSchemas).toBeLessThanOrEqual(before.ajvSchemas);
    // and the cache itself is bounded: more distinct schemas than it holds evict the oldest
    for (let i = 0; i < VALIDATOR_CACHE_SIZE + 10; i++)
      compileArgumentValidator('t', { type: 'object', properties: { [`p${i}`]: { type: 'number' } } });
    expect(validatorCacheStats().cached).toBe(VALIDATOR_CACHE_SIZE);
    // a broken schema is remembered as broken, with its reason, per tool name
    expect(() => compileArgumentValidator('a', { $ref: '#/nowhere' })).toThrow(
      'tool a: invalid parameters schema: $ref "#/nowhere" does not resolve',
    );
    expect(() => compileArgumentValidator('b', { $ref: '#/nowhere' })).toThrow(/^tool b: /);
  });

  it('uniqueItems on 20,000 object items: one linear pass, and duplicates are still found', () => {
    const v = compileArgumentValidator('u', {
      type: 'object',
      properties: { rows: { type: 'array', items: { type: 'object' }, uniqueItems: true } },
    });
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ i })); // 200 KB, under the argument limit
    expect(v({ rows })).toEqual({ rows });
    // Ajv's own keyword compares object items pairwise (~2 * 10^8 deep comparisons here, 5.2 s measured): the
    // sanitised schema hands the check to one linear pass instead.
    const sanitized = sanitizeSchema({ type: 'array', uniqueItems: true }) as Record<string, unknown>;
    expect(sanitized).toEqual({ type: 'array', toolrlUniqueItems: true });
    expect(sanitizeSchema({ type: 'array', uniqueItems: false })).toEqual({ type: 'array' });
    // equal as JSON values: key order does not matter, string "1" is not number 1
    expect(() => v({ rows: [{ a: 1, b: [2] }, { id: 'x' }, { b: [2], a: 1 }] })).toThrow(
      'u: argument rows must NOT have duplicate items (items ## 0 and 2 are identical)',
    );
    expect(v({ rows: [{ a: '1' }, { a: 1 }] })).toBeTruthy();
    const scalars = compileArgumentValidator('s', {
      type: 'object',
      properties: { xs: { type: 'array', uniqueItems: true } },
    });
    expect(() => scalars({ xs: [1, 2, 1] })).toThrow(/duplicate items/);
    expect(scalars({ xs: [1, '1', true, null, [1]] })).toBeTruthy();
  });

  it('refuses a schema whose $refs expand past the node limit, or that recurses', () => {
    // 1.6 KB: 24 definitions whose anyOf names the next one twice is 2^24 subschemas (Ajv ran out of heap).
    const $defs: Record<string, unknown> = { a24: { type: 'string' } };
    for (let i = 0; i < 24; i++)
      $defs[`a${i}`] = { anyOf: [{ $ref: `#/$defs/a${i + 1}` }, { $ref: `#/$defs/a${i + 1}` }] };
    const bomb = { type: 'object', properties: { x: { $ref: '#/$defs/a0' } }, $defs };
    expect(() => compileArgumentValidator('bomb', bomb)).toThrow(
      `tool bomb: invalid parameters schema: parameters schema expands to more than ${MAX_SCHEMA_NODES} subschemas`,
    );
    expect(() =>
      compileArgumentValidator('loop', { type: 'object', properties: { x: { $ref: '#' } } }),
    ).toThrow(/\$ref "#" is recursive/);
    expect(() => compileArgumentValidator('remote', { $ref: 'https://example.com/s.json' })).toThrow(
      /only local refs/,
    );
    // a few shared definitions (what pydantic writes) are fine, and validate
    const shared = {
      type: 'object',
      properties: { from: { $ref: '#/$defs/Place' }, to: { $ref: '#/$defs/Place' } },
      required: ['from', 'to'],
      $defs: { Place: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } },
    };
    const v = compileArgumentValidator('trip', shared);
    expect(v({ from: { city: 'a' }, to: { city: 'b' } })).toBeTruthy();
    expect(() => v({ from: { city: 'a' }, to: {} })).toThrow('trip: missing required argument "city"');
  });

  it('keeps properties named like keywords and drops ids that would clash between rows', () => {
    const schema = {
      $id: 'https://example.com/tool',
      type: 'object',
      properties: { pattern: { type: 'STRING' }, type: { type: 'string' } },
      required: ['pattern'],
      additionalProperties: false,
    };
    const a = compileArgumentValidator('a', schema);
    const b = compileArgumentValidator('b', { ...schema, description: 'another row, the same $id' });
    expect(a({ pattern: 'x', type: 'y' })).toEqual({ pattern: 'x', type: 'y' });
    expect(() => b({ type: 'y' })).toThrow('b: missing required argument "pattern"');
  });

  it('arguments nested deeper than the limit are a tool error, not a RangeError', () => {
    const v = compileArgumentValidator('any', { type: 'object' });
    let deep: unknown = 1;
    for (let i = 0; i < 6000; i++) deep = { a: deep };
    expect(() => v({ x: deep })).toThrow(`arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels`);
    expect(() => v(`{"x": ${'['.repeat(6000)}${']'.repeat(6000)}}`)).toThrow(/nest deeper/);
    let ok: unknown = 1;
    for (let i = 0; i < MAX_ARGUMENT_DEPTH; i++) ok = { a: ok };
    expect(v(ok)).toEqual(ok); // exactly MAX_ARGUMENT_DEPTH levels
    expect(() => v({ a: ok })).toThrow(/nest deeper/);
  });
});
