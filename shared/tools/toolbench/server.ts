// `toolrl toolbench serve --cache DIR`: a StableToolBench-compatible `/virtual` server that answers
// from a StableToolBench response cache (`DIR/{category}/{tool}_for_{category}/{api}.json`, keyed by
// Python's repr of the input) and returns StableToolBench's `{error, response}` shape for misses.
import { readFile } from 'node:fs/promises';
import { join, resolve, sep } from 'node:path';
import { z } from 'zod';
import { parsePythonLiteral } from '#shared/parsing/python-literal';
import { canonicalJson } from '../canonical-json.ts';
import { HttpError, type RunningServer, type ServeOptions, serveJson } from '../serve.ts';
import { cachePath } from './names.ts';
import { pythonRepr } from './python-repr.ts';

export const VirtualRequestSchema = z.object({
  category: z.string(),
  tool_name: z.string(),
  api_name: z.string(),
  tool_input: z.union([z.string(), z.record(z.string(), z.unknown())]),
  strip: z.string().default(''),
  toolbench_key: z.string().default(''),
});

/** How a miss starts: the toolbench tool turns such an answer into a `not_cached` tool error. */
export const NOT_CACHED = 'not cached: no response is cached for';

type CacheFile = { byRepr: Map<string, unknown>; byCanonical: Map<string, unknown> };

export class ToolBenchCache {
  private readonly files = new Map<string, CacheFile | null>();
  hits = 0;
  misses = 0;
  constructor(readonly dir: string) {}

  async lookup(req: z.infer<typeof VirtualRequestSchema>): Promise<{ error: string; response: unknown }> {
    const parts = cachePath(req.category, req.tool_name, req.api_name);
    const api = parts[2]!.slice(0, -'.json'.length);
    if (api === 'chat_with_user') return { error: '', response: 'Chat with user.' };
    let input: unknown = req.tool_input;
    if (typeof input === 'string') {
      try {
        input = input.trim() === '' ? {} : JSON.parse(input);
      } catch {
        return { error: 'Tool input parse error...\n', response: '' };
      }
    }
    const file = await this.load(parts);
    const hit = file?.byRepr.get(pythonRepr(input)) ?? file?.byCanonical.get(canonicalJson(input));
    if (hit !== undefined) {
      this.hits++;
      return hit as { error: string; response: unknown };
    }
    this.misses++;
    return {
      error: `${NOT_CACHED} ${parts.join('/')} with input ${pythonRepr(input).slice(0, 200)}`,
      response: '',
    };
  }

  private async load(parts: string[]): Promise<CacheFile | null> {
    const path = resolve(this.dir, join(...parts));
    if (!path.startsWith(resolve(this.dir) + sep)) return null; // names come from requests
    if (this.files.has(path)) return this.files.get(path)!;
    let entry: CacheFile | null = null;
    try {
      const record = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
      entry = { byRepr: new Map(Object.entries(record)), byCanonical: new Map() };
      for (const [k, v] of Object.entries(record)) {
        try {
          entry.byCanonical.set(canonicalJson(parsePythonLiteral(k)), v);
        } catch {
          // a key that is not a literal can still match by repr
        }
      }
    } catch {
      entry = null;
    }
    this.files.set(path, entry);
    return entry;
  }
}

export function serveToolBench(cache: ToolBenchCache, opts: ServeOptions = {}): Promise<RunningServer> {
  return serveJson(
    {
      '/virtual': async (body) => {
        const r = VirtualRequestSchema.safeParse(body);
        if (!r.success)
          throw new HttpError(422, {
            detail: r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '),
          });
        return cache.lookup(r.data);
      },
    },
    opts,
  );
}
