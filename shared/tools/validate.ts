// Argument validation against a tool's JSON Schema with Ajv, hardened for schemas that come from data
// (ToolBench): no `$data`, bounded schema size and depth, no user regexes (ReDoS), first error only.
import { Ajv, type ValidateFunction } from 'ajv';
import { ToolFailure } from './types.ts';

export const MAX_SCHEMA_BYTES = 64 * 1024;
export const MAX_SCHEMA_DEPTH = 32;
/** Arguments larger than this are refused before validation (a model can emit megabytes). */
export const MAX_ARGUMENT_BYTES = 256 * 1024;

// strict: false because ToolBench schemas carry non-standard keywords (`example_value`, `optional`);
// allErrors: false because collecting every error is a known DoS vector on hostile schemas.
const ajv = new Ajv({
  $data: false,
  allErrors: false,
  strict: false,
  validateFormats: false,
  messages: true,
});

/** JSON-Schema type names as ToolBench writes them ("NUMBER", "str") mapped to the standard ones. */
const TYPE_ALIASES: Record<string, string> = {
  str: 'string',
  string: 'string',
  number: 'number',
  float: 'number',
  double: 'number',
  int: 'integer',
  integer: 'integer',
  bool: 'boolean',
  boolean: 'boolean',
  object: 'object',
  dict: 'object',
  array: 'array',
  list: 'array',
  null: 'null',
};

/**
 * Returns a copy of `schema` that Ajv can compile safely, or throws naming what is wrong.
 * Drops `pattern`/`patternProperties` (user regexes run on model output could backtrack forever),
 * normalises type aliases and drops unknown type names rather than failing the whole tool.
 */
export function sanitizeSchema(schema: unknown): Record<string, unknown> {
  const size = JSON.stringify(schema ?? {}).length;
  if (size > MAX_SCHEMA_BYTES)
    throw new Error(`parameters schema is ${size} bytes (max ${MAX_SCHEMA_BYTES})`);
  const walk = (node: unknown, depth: number): unknown => {
    if (depth > MAX_SCHEMA_DEPTH) throw new Error(`parameters schema nests deeper than ${MAX_SCHEMA_DEPTH}`);
    if (Array.isArray(node)) return node.map((n) => walk(n, depth + 1));
    if (node === null || typeof node !== 'object') return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === 'pattern' || key === 'patternProperties' || key === '$data') continue;
      if (key === 'type' && typeof value === 'string') {
        const t = TYPE_ALIASES[value.toLowerCase()];
        if (t) out[key] = t;
        continue;
      }
      if (key === 'type' && Array.isArray(value)) {
        const ts = value.map((v) => (typeof v === 'string' ? TYPE_ALIASES[v.toLowerCase()] : undefined));
        if (ts.every((t) => t !== undefined)) out[key] = ts;
        continue;
      }
      // ToolBench lists `required: []` alongside a non-standard `optional: [...]`; keep required only if valid.
      if (key === 'required' && !(Array.isArray(value) && value.every((v) => typeof v === 'string')))
        continue;
      out[key] = walk(value, depth + 1);
    }
    return out;
  };
  const cleaned = walk(schema ?? {}, 0);
  if (cleaned === null || typeof cleaned !== 'object' || Array.isArray(cleaned))
    throw new Error('parameters schema must be a JSON object');
  return cleaned as Record<string, unknown>;
}

export type ArgumentValidator = (args: unknown) => Record<string, unknown>;

/** Compiles a validator for a tool's `parameters`; throws (at registry build time) if the schema is unusable. */
export function compileArgumentValidator(toolName: string, parameters: unknown): ArgumentValidator {
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(sanitizeSchema(parameters));
  } catch (err) {
    throw new Error(`tool ${toolName}: invalid parameters schema: ${(err as Error).message}`);
  }
  return (raw) => {
    const args = decodeArguments(raw);
    if (!validate(args)) {
      const e = validate.errors?.[0];
      const where = e?.instancePath
        ? `argument ${e.instancePath.slice(1).replaceAll('/', '.')}`
        : 'arguments';
      const detail =
        e?.keyword === 'additionalProperties'
          ? `unexpected argument "${(e.params as { additionalProperty: string }).additionalProperty}"`
          : e?.keyword === 'required'
            ? `missing required argument "${(e.params as { missingProperty: string }).missingProperty}"`
            : `${where} ${e?.message ?? 'are invalid'}`;
      throw new ToolFailure('invalid_arguments', `${toolName}: ${detail}`);
    }
    return args;
  };
}

/** Arguments arrive as an object or as a JSON string of one (both occur in model output). */
export function decodeArguments(raw: unknown): Record<string, unknown> {
  let value = raw ?? {};
  if (typeof value === 'string') {
    if (value.length > MAX_ARGUMENT_BYTES)
      throw new ToolFailure(
        'invalid_arguments',
        `arguments are ${value.length} bytes (max ${MAX_ARGUMENT_BYTES})`,
      );
    if (value.trim() === '') value = {};
    else {
      try {
        value = JSON.parse(value);
      } catch (err) {
        throw new ToolFailure('invalid_arguments', `arguments are not valid JSON: ${(err as Error).message}`);
      }
    }
  } else if (JSON.stringify(value).length > MAX_ARGUMENT_BYTES) {
    throw new ToolFailure('invalid_arguments', `arguments exceed ${MAX_ARGUMENT_BYTES} bytes`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ToolFailure('invalid_arguments', `arguments must be a JSON object, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);
