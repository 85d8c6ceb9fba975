// Argument validation against a tool's JSON Schema with Ajv, for schemas that come from data (ToolBench rows
// bring theirs with every call): schemas are made safe first (schema.ts), compiled once per distinct schema
// into a bounded cache, and released from Ajv's own cache, so a long run compiles each schema once and holds
// a bounded number of validators. First error only.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { LRUCache } from 'lru-cache';
import { MAX_ARGUMENT_DEPTH, nestsDeeperThan } from '#shared/parsing/depth';
import { canonicalJson } from './canonical-json.ts';
import { MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, sanitizeSchema, UNIQUE_ITEMS_KEYWORD } from './schema.ts';
import { ToolFailure } from './types.ts';

export { MAX_SCHEMA_BYTES, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, sanitizeSchema } from './schema.ts';

/** Arguments larger than this are refused before validation (a model can emit megabytes). */
export const MAX_ARGUMENT_BYTES = 256 * 1024;
/** Distinct schemas whose compiled validators are kept (~16 KB each); past it the least recently used go. */
export const VALIDATOR_CACHE_SIZE = 1024;

// strict: false because ToolBench schemas carry non-standard keywords (`example_value`, `optional`);
// allErrors: false because collecting every error is a known DoS vector on hostile schemas.
const ajv = new Ajv({
  $data: false,
  allErrors: false,
  strict: false,
  validateFormats: false,
  messages: true,
});

// `uniqueItems` in linear time (one canonical key per item into a Map), where Ajv's own compares object and
// array items pairwise. Recursion in `canonicalJson` is bounded: arguments deeper than MAX_ARGUMENT_DEPTH never
// reach a validator.
const uniqueItems = function check(enabled: boolean, data: unknown[]): boolean {
  if (!enabled) return true;
  const seen = new Map<string, number>();
  for (let i = 0; i < data.length; i++) {
    const key = canonicalJson(data[i]);
    const j = seen.get(key);
    if (j !== undefined) {
      const error: Partial<ErrorObject> = {
        keyword: 'uniqueItems',
        message: `must NOT have duplicate items (items ## ${j} and ${i} are identical)`,
        params: { i, j },
      };
      (check as unknown as { errors: Partial<ErrorObject>[] }).errors = [error];
      return false;
    }
    seen.set(key, i);
  }
  return true;
};
ajv.addKeyword({
  keyword: UNIQUE_ITEMS_KEYWORD,
  type: 'array',
  schemaType: 'boolean',
  errors: true,
  validate: uniqueItems,
});

type Compiled = { validate: ValidateFunction } | { error: string };
const compiled = new LRUCache<string, Compiled>({ max: VALIDATOR_CACHE_SIZE });
let compilations = 0;

/** How many schemas were compiled and how many validators are held (what the cache bounds). */
export function validatorCacheStats(): { compilations: number; cached: number; ajvSchemas: number } {
  // Ajv keeps every compiled schema in a private map until it is removed; this reads its size.
  const ajvSchemas = (ajv as unknown as { _cache: Map<unknown, unknown> })._cache.size;
  return { compilations, cached: compiled.size, ajvSchemas };
}

function compile(parameters: unknown): Compiled {
  // Only schemas that can pass sanitizeSchema's limits are worth a key; the others fail there, uncached.
  const key = nestsDeeperThan(parameters, MAX_SCHEMA_DEPTH + 1)
    ? ''
    : (JSON.stringify(parameters ?? {}) ?? '');
  const cacheable = key !== '' && key.length <= MAX_SCHEMA_BYTES;
  const hit = cacheable ? compiled.get(key) : undefined;
  if (hit) return hit;
  let result: Compiled;
  try {
    const schema = sanitizeSchema(parameters);
    compilations++;
    const validate = ajv.compile(schema);
    ajv.removeSchema(schema); // the validator keeps what it needs; Ajv's map would keep it forever
    result = { validate };
  } catch (err) {
    result = { error: (err as Error).message };
  }
  if (cacheable) compiled.set(key, result);
  return result;
}

export type ArgumentValidator = (args: unknown) => Record<string, unknown>;

/** Compiles a validator for a tool's `parameters`; throws (at registry build time) if the schema is unusable. */
export function compileArgumentValidator(toolName: string, parameters: unknown): ArgumentValidator {
  const c = compile(parameters);
  if ('error' in c) throw new Error(`tool ${toolName}: invalid parameters schema: ${c.error}`);
  const { validate } = c;
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
  }
  // before anything recursive (JSON.stringify below, the validator) touches them
  if (nestsDeeperThan(value, MAX_ARGUMENT_DEPTH))
    throw new ToolFailure('invalid_arguments', `arguments nest deeper than ${MAX_ARGUMENT_DEPTH} levels`);
  if (typeof raw !== 'string' && JSON.stringify(value).length > MAX_ARGUMENT_BYTES)
    throw new ToolFailure('invalid_arguments', `arguments exceed ${MAX_ARGUMENT_BYTES} bytes`);
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new ToolFailure('invalid_arguments', `arguments must be a JSON object, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

const describe = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'an array' : `a ${typeof v}`);
