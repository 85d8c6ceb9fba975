// Tool parameter schemas come from data (ToolBench rows, BFCL files, users' tool configs): this makes one safe
// to compile and cheap to run before Ajv sees it. Bounded size, depth and ref-expanded node count, no user
// regexes, no `$data`, no ids that would register globally, and `uniqueItems` swapped for a linear check.

/** Serialised size of a parameters schema. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** JSON nesting of a parameters schema (each `properties` level counts twice: the map and the schema). */
export const MAX_SCHEMA_DEPTH = 32;
/**
 * Schema objects a validation may visit, with every `$ref` expanded where it is used. A 1.6 KB schema of 24
 * `$defs` whose `anyOf` names the next one twice is 2^24 nodes: Ajv ran out of a 4 GB heap collecting its
 * errors. Tool schemas seen in ToolBench and BFCL have tens to a few hundred.
 */
export const MAX_SCHEMA_NODES = 4096;
/** The keyword the linear `uniqueItems` check is registered under (see validate.ts). */
export const UNIQUE_ITEMS_KEYWORD = 'toolrlUniqueItems';

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

// Where subschemas sit: everything else is data (enum, const, default, description) and is copied untouched,
// so a property named `pattern` or `type` stays a property.
const ONE_SCHEMA = new Set([
  'items',
  'additionalItems',
  'additionalProperties',
  'unevaluatedItems',
  'unevaluatedProperties',
  'propertyNames',
  'contains',
  'not',
  'if',
  'then',
  'else',
]);
const SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const SCHEMA_MAP = new Set(['properties', '$defs', 'definitions', 'dependentSchemas']);
const DEFINITIONS = new Set(['$defs', 'definitions']);
// User regexes run on model output could backtrack forever; ids and anchors would register the schema in
// Ajv's global table (a second row reusing an id fails); `$data` reads limits from the data itself.
const DROPPED = new Set([
  'pattern',
  'patternProperties',
  '$data',
  '$id',
  '$schema',
  '$anchor',
  '$dynamicAnchor',
  '$dynamicRef',
  '$recursiveAnchor',
  '$recursiveRef',
]);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Nesting depth of a JSON value, without recursion (a hostile schema can nest thousands deep). */
function depthOf(value: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    max = Math.max(max, depth);
    if (max > MAX_SCHEMA_DEPTH) return max;
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  return max;
}

function sanitizeNode(node: unknown): unknown {
  if (!isObject(node)) return node; // `true`/`false` schemas, or something Ajv will name as invalid
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) {
    if (DROPPED.has(key)) continue;
    if (key === 'type' && typeof value === 'string') {
      const t = TYPE_ALIASES[value.toLowerCase()];
      if (t) out[key] = t;
    } else if (key === 'type' && Array.isArray(value)) {
      const ts = value.map((v) => (typeof v === 'string' ? TYPE_ALIASES[v.toLowerCase()] : undefined));
      if (ts.every((t) => t !== undefined)) out[key] = ts;
    } else if (key === 'required') {
      // ToolBench lists `required: []` beside a non-standard `optional: [...]`; keep `required` only if valid.
      if (Array.isArray(value) && value.every((v) => typeof v === 'string')) out[key] = value;
    } else if (key === 'uniqueItems') {
      // Ajv compares object items pairwise: 20k items blocked the event loop for 5 s.
      if (value === true) out[UNIQUE_ITEMS_KEYWORD] = true;
    } else if (ONE_SCHEMA.has(key)) {
      out[key] = Array.isArray(value) ? value.map(sanitizeNode) : sanitizeNode(value); // `items: [...]` (draft 7)
    } else if (SCHEMA_LIST.has(key) && Array.isArray(value)) {
      out[key] = value.map(sanitizeNode);
    } else if (SCHEMA_MAP.has(key) && isObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, sanitizeNode(v)]));
    } else if (key === 'dependencies' && isObject(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, Array.isArray(v) ? v : sanitizeNode(v)]),
      );
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** The subschemas of a schema object, each as it is validated (definitions only count where referenced). */
function* subschemas(node: Json): Generator<unknown> {
  for (const [key, value] of Object.entries(node)) {
    if (DEFINITIONS.has(key)) continue;
    if (ONE_SCHEMA.has(key) || SCHEMA_LIST.has(key)) {
      if (Array.isArray(value)) yield* value;
      else yield value;
    } else if ((SCHEMA_MAP.has(key) || key === 'dependencies') && isObject(value)) {
      yield* Object.values(value);
    }
  }
}

function resolvePointer(root: Json, ref: string): unknown {
  if (ref === '#') return root;
  if (!ref.startsWith('#/'))
    throw new Error(`$ref ${JSON.stringify(ref)}: only local refs (#/...) are allowed`);
  let node: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const segment = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
    node = isObject(node) || Array.isArray(node) ? (node as Json)[segment] : undefined;
    if (node === undefined) throw new Error(`$ref ${JSON.stringify(ref)} does not resolve`);
  }
  return node;
}

/** Schema objects a validation can visit with refs expanded; throws past MAX_SCHEMA_NODES or on a ref cycle. */
function expandedNodes(root: Json): number {
  const perRef = new Map<string, number>();
  const open = new Set<string>();
  const count = (node: unknown): number => {
    if (!isObject(node)) return 0;
    let n = 1;
    const ref = node['$ref'];
    if (typeof ref === 'string') {
      let size = perRef.get(ref);
      if (size === undefined) {
        if (open.has(ref))
          throw new Error(`$ref ${JSON.stringify(ref)} is recursive; recursive schemas are not supported`);
        if (open.size >= MAX_SCHEMA_DEPTH) throw new Error(`$ref chain deeper than ${MAX_SCHEMA_DEPTH}`);
        open.add(ref);
        size = count(resolvePointer(root, ref));
        open.delete(ref);
        perRef.set(ref, size);
      }
      n += size;
    }
    for (const child of subschemas(node)) {
      n += count(child);
      if (n > MAX_SCHEMA_NODES) break;
    }
    if (n > MAX_SCHEMA_NODES)
      throw new Error(
        `parameters schema expands to more than ${MAX_SCHEMA_NODES} subschemas (with $ref expanded)`,
      );
    return n;
  };
  return count(root);
}

/**
 * Returns a copy of `schema` that Ajv can compile and run safely, or throws naming what is wrong. Drops
 * `pattern`/`patternProperties` and ids, normalises ToolBench type names and drops unknown ones rather than
 * failing the whole tool.
 */
export function sanitizeSchema(schema: unknown): Record<string, unknown> {
  if (depthOf(schema ?? {}) > MAX_SCHEMA_DEPTH)
    throw new Error(`parameters schema nests deeper than ${MAX_SCHEMA_DEPTH}`);
  const size = JSON.stringify(schema ?? {}).length;
  if (size > MAX_SCHEMA_BYTES)
    throw new Error(`parameters schema is ${size} bytes (max ${MAX_SCHEMA_BYTES})`);
  const cleaned = sanitizeNode(schema ?? {});
  if (!isObject(cleaned)) throw new Error('parameters schema must be a JSON object');
  expandedNodes(cleaned);
  return cleaned;
}
