// `toolbench`: ToolBench APIs served by a StableToolBench-compatible `/virtual` server (a real one or
// `toolrl toolbench serve`), plus `Finish`. APIs come from the config (`apis`) or from each dataset row.
import { z } from 'zod';
import type { ToolSchema } from '#shared/schemas/chat';
import type { ToolLimits } from '../config.ts';
import { fetchJson } from '../http/fetch-json.ts';
import { defineToolKind, type RowTools } from '../kind.ts';
import { readToolSecret } from '../secrets.ts';
import { type Tool, ToolFailure } from '../types.ts';
import { finishTool } from './finish.ts';
import { functionName, splitFunctionName } from './names.ts';
import { NOT_CACHED } from './server.ts';

const ApiSchema = z.object({
  category: z.string().default(''),
  tool_name: z.string().min(1),
  api_name: z.string().min(1),
  description: z.string().default(''),
  parameters: z.record(z.string(), z.unknown()).default({ type: 'object', properties: {} }),
});

const Config = z.object({
  /** StableToolBench's `/virtual` endpoint, e.g. http://127.0.0.1:8080/virtual. */
  service_url: z.url(),
  /** Sent as StableToolBench expects; read from this variable so keys stay out of config files (an allow-listed
   * name: TOOLRL_TOOL_SECRETS, or a key of the tool secret on AWS). */
  toolbench_key_env: z.string().optional(),
  /** Category for row APIs when the row names none. */
  category: z.string().default(''),
  /** StableToolBench's `strip` (observation compression), passed through. */
  strip: z.string().default('truncate'),
  apis: z.array(ApiSchema).default([]),
  include_finish: z.boolean().default(true),
});

/** StableToolBench's answer: `{error, response}`; a non-empty `error` is a failed call. */
const VirtualResponseSchema = z
  .object({ error: z.string().default(''), response: z.unknown().default('') })
  .loose();

export const toolbenchKind = defineToolKind({
  kind: 'toolbench',
  defaults: { timeoutS: 30, numWorkers: 8 },
  config: Config,
  build: (options, { env, limits }) => {
    const key = options.toolbench_key_env
      ? (readToolSecret(env, options.toolbench_key_env, 'tool toolbench: bad config: toolbench_key_env') ??
        '')
      : '';
    const make = (schema: ToolSchema, category: string, toolName: string, apiName: string): Tool => ({
      schema,
      execute: (args, ctx) =>
        callVirtual(
          options.service_url,
          {
            category,
            tool_name: toolName,
            api_name: apiName,
            tool_input: JSON.stringify(args),
            strip: options.strip,
            toolbench_key: key,
          },
          limits,
          ctx.signal,
        ),
    });
    const tools: Tool[] = options.apis.map((api) =>
      make(
        {
          type: 'function',
          function: {
            name: functionName(api.tool_name, api.api_name),
            description: api.description,
            parameters: api.parameters,
          },
        },
        api.category || options.category,
        api.tool_name,
        api.api_name,
      ),
    );
    if (options.include_finish) tools.push(finishTool);
    return {
      tools,
      rowTool: (schema: ToolSchema, row: RowTools) => {
        const { toolName, apiName } = splitFunctionName(schema.function.name);
        return make(schema, row.category ?? options.category, toolName, apiName);
      },
    };
  },
});

async function callVirtual(
  url: string,
  body: Record<string, string>,
  limits: ToolLimits,
  signal: AbortSignal,
): Promise<string> {
  const raw = await fetchJson(url, {
    body,
    signal,
    maxRetries: limits.maxRetries,
    retryBaseMs: limits.retryBaseMs,
    headers: { toolbench_key: body.toolbench_key ?? '' },
  });
  const r = VirtualResponseSchema.safeParse(raw);
  if (!r.success)
    throw new ToolFailure('http_error', 'the ToolBench server answered without {error, response}');
  // The model reads the whole {error, response} object, as in ToolBench's own rollouts.
  const observation = JSON.stringify({ error: r.data.error, response: r.data.response });
  // A cache without this call is the environment's gap, not the model's mistake: its own type, which the
  // toolbench reward leaves out of the error rate.
  if (r.data.error.startsWith(NOT_CACHED)) throw new ToolFailure('not_cached', r.data.error, observation);
  if (r.data.error) throw new ToolFailure('execution_error', r.data.error, observation);
  return observation;
}
