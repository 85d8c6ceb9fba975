// `http`: POSTs the validated arguments as JSON to a URL and returns the answer, for any service that
// has no built-in kind. Give it a `tool_schema` (name, description, parameters) in the tool config.
import { z } from 'zod';
import { defineToolKind } from '../kind.ts';
import { readToolSecret } from '../secrets.ts';
import { fetchJson } from './fetch-json.ts';

const Config = z.object({
  url: z.url(),
  /** Extra headers, literal. */
  headers: z.record(z.string(), z.string()).default({}),
  /** Headers whose values are read from environment variables (keeps tokens out of config files); only
   * variables the operator allow-lists (TOOLRL_TOOL_SECRETS) and never `AWS_*`. */
  headers_from_env: z.record(z.string(), z.string()).default({}),
  /** If set, return only this top-level field of a JSON answer (e.g. "result"). */
  result_field: z.string().optional(),
  max_response_bytes: z
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
});

export const httpKind = defineToolKind({
  kind: 'http',
  defaults: { timeoutS: 30, numWorkers: 8 },
  config: Config,
  build: (options, { env, limits }) => {
    const headers = { ...options.headers };
    for (const [header, variable] of Object.entries(options.headers_from_env)) {
      const where = `tool http: bad config: headers_from_env.${header}`;
      const value = readToolSecret(env, variable, where);
      if (value === undefined) throw new Error(`${where}: variable ${variable} is not set`);
      headers[header] = value;
    }
    return {
      tools: [
        {
          schema: {
            type: 'function',
            function: {
              name: 'http_request',
              description: `Send the arguments as JSON to ${new URL(options.url).origin} and return its answer.`,
              parameters: { type: 'object', properties: {} },
            },
          },
          execute: async (args, ctx) => {
            const text = (await fetchJson(options.url, {
              body: args,
              headers,
              signal: ctx.signal,
              maxRetries: limits.maxRetries,
              retryBaseMs: limits.retryBaseMs,
              maxResponseBytes: options.max_response_bytes,
              as: 'text',
            })) as string;
            if (!options.result_field) return text;
            try {
              const json = JSON.parse(text) as Record<string, unknown>;
              const v = json?.[options.result_field];
              return typeof v === 'string' ? v : JSON.stringify(v ?? null);
            } catch {
              return text;
            }
          },
        },
      ],
    };
  },
});
