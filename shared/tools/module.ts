// TypeScript tool modules: `kind: module`, `module: ./my-tool.ts` (a .ts or .js file, relative to the config), loaded
// the way reward modules are. The module exports its tools as `tools` (a list), `tool` (one) or `default`; each is
//   { schema: <OpenAI function schema>, execute(args, ctx) => string | {text, reward?, metrics?} (or a promise) }
// or a function (config, {baseDir, env}) returning one or a list (for tools built from the entry's `config`).
// A tool that throws reports an execution error the model reads; `ctx.signal` aborts on its timeout.
import { pathToFileURL } from 'node:url';
import { ToolSchemaSchema } from '#shared/schemas/chat';
import { resolveUserFile } from './python/tool.ts';
import { type Tool, type ToolEnv, ToolFailure } from './types.ts';

export const MODULE_TOOL_DEFAULTS = { timeoutS: 30, numWorkers: 8, maxRetries: 0 };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function checkedOutput(
  value: unknown,
  name: string,
): string | { text: string; reward?: number; metrics?: Record<string, unknown> } {
  if (typeof value === 'string') return value;
  if (isObject(value) && typeof value.text === 'string') {
    const reward = value.reward;
    if (reward !== undefined && (typeof reward !== 'number' || !Number.isFinite(reward)))
      throw new ToolFailure('internal_error', `tool ${name} returned a reward that is not a finite number`);
    if (value.metrics !== undefined && !isObject(value.metrics))
      throw new ToolFailure('internal_error', `tool ${name} returned metrics that are not an object`);
    return {
      text: value.text,
      ...(reward !== undefined ? { reward } : {}),
      ...(value.metrics !== undefined ? { metrics: value.metrics as Record<string, unknown> } : {}),
    };
  }
  throw new ToolFailure(
    'internal_error',
    `tool ${name} must return a string or {text, reward?, metrics?}; got ${JSON.stringify(value)?.slice(0, 200)}`,
  );
}

function toTool(def: unknown, where: string): Tool {
  if (!isObject(def)) throw new Error(`${where}: a tool must be an object {schema, execute}`);
  const parsed = ToolSchemaSchema.safeParse(def.schema);
  if (!parsed.success)
    throw new Error(
      `${where}: \`schema\` is not an OpenAI function schema: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const execute = def.execute;
  if (typeof execute !== 'function') throw new Error(`${where}: \`execute\` must be a function`);
  const close = typeof def.close === 'function' ? (def.close as () => Promise<void>) : undefined;
  const name = parsed.data.function.name;
  return {
    schema: parsed.data,
    execute: async (args, ctx) => {
      let value: unknown;
      try {
        value = await execute.call(def, args, ctx);
      } catch (err) {
        if (err instanceof ToolFailure) throw err;
        throw new ToolFailure('execution_error', `${(err as Error)?.message ?? String(err)}`);
      }
      return checkedOutput(value, name);
    },
    ...(close ? { close: () => Promise.resolve(close.call(def)) } : {}),
  };
}

/** Imports a tool module and builds its tools; a missing file, a bad export or a bad schema throws naming the path. */
export async function loadToolModule(
  path: string,
  config: Record<string, unknown>,
  env: ToolEnv,
): Promise<Tool[]> {
  const file = resolveUserFile(env.baseDir, path);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`tool module ${path}: cannot import ${file}: ${(err as Error).message}`);
  }
  let exported = mod.tools ?? mod.tool ?? mod.default;
  if (exported === undefined)
    throw new Error(`tool module ${path} exports no \`tools\`, \`tool\` or default ({schema, execute})`);
  if (typeof exported === 'function')
    exported = await (exported as (c: unknown, e: unknown) => unknown)(config, {
      baseDir: env.baseDir,
      env: env.env,
    });
  const defs = Array.isArray(exported) ? exported : [exported];
  if (defs.length === 0) throw new Error(`tool module ${path} exports an empty list of tools`);
  return defs.map((d, i) => toTool(d, `tool module ${path}${defs.length > 1 ? ` [${i}]` : ''}`));
}
