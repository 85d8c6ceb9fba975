// BFCL's function docs use Python-flavoured JSON Schema (`dict`, `float`, `tuple`, `any`); tools need the standard
// names. Shared by the BFCL converter, the reader of EnvTuning's BFCL rows (foreign-rows.ts) and the held-out
// functions of a multi-turn row (episode/user-turns.ts), so it sits below all three.

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const BFCL_TYPES: Record<string, string | undefined> = {
  dict: 'object',
  float: 'number',
  tuple: 'array',
  any: undefined,
};

/** BFCL's Python-flavoured JSON Schema (`dict`, `float`, `tuple`, `any`) as standard JSON Schema. */
export function bfclSchemaToJsonSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(bfclSchemaToJsonSchema);
  if (!isObject(schema)) return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'type' && typeof v === 'string') {
      const mapped = v in BFCL_TYPES ? BFCL_TYPES[v] : v;
      if (mapped !== undefined) out.type = mapped;
    } else if (k === 'properties' && isObject(v)) {
      out.properties = Object.fromEntries(Object.entries(v).map(([p, s]) => [p, bfclSchemaToJsonSchema(s)]));
    } else if (k === 'items' || k === 'additionalProperties') {
      out[k] = bfclSchemaToJsonSchema(v);
    } else out[k] = v;
  }
  return out;
}

/** A BFCL function doc (`{name, description, parameters}`) as an OpenAI function tool schema. */
export function bfclDocToToolSchema(doc: unknown): unknown {
  if (!isObject(doc) || typeof doc.name !== 'string') return doc;
  return {
    type: 'function',
    function: {
      name: doc.name,
      description: typeof doc.description === 'string' ? doc.description : '',
      parameters: bfclSchemaToJsonSchema(doc.parameters ?? { type: 'dict', properties: {} }),
    },
  };
}
