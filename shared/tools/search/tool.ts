// `search`: top-k passages for each query in `query_list`, from a Search-R1 `/retrieve` service
// (`retrieval_service_url`) or, by default, from the built-in index over a local corpus.
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { fetchJson } from '../http/fetch-json.ts';
import { defineToolKind } from '../kind.ts';
import { ToolFailure } from '../types.ts';
import { loadCorpus, type Passage, SAMPLE_CORPUS_PATH, splitPassage } from './corpus.ts';
import { MAX_QUERIES, PassageIndex, type RetrievedPassage } from './index.ts';

const Config = z.object({
  /** A Search-R1-compatible `/retrieve` endpoint; without it the built-in index is used. */
  retrieval_service_url: z.url().optional(),
  /** JSONL corpus for the built-in index (default: the shipped sample corpus). */
  corpus: z.string().optional(),
  topk: z.number().int().positive().max(50).default(3),
});

/** Search-R1's passage formatting: `Doc i(Title: t) text`, one per line; queries separated by `---`. */
export function formatPassages(perQuery: Passage[][]): string {
  return perQuery
    .map((docs) =>
      docs.length === 0
        ? 'No results.'
        : docs
            .map((d, i) => {
              const { title, text } = splitPassage(d.contents);
              return `Doc ${i + 1}(Title: ${title}) ${text}`;
            })
            .join('\n'),
    )
    .join('\n---\n');
}

const RetrieveResponseSchema = z.object({
  result: z.array(
    z.array(
      z.union([
        z.object({
          document: z.object({ contents: z.string(), id: z.unknown().optional() }),
          score: z.number().optional(),
        }),
        z.object({ contents: z.string(), id: z.unknown().optional() }),
      ]),
    ),
  ),
});

export const searchKind = defineToolKind({
  kind: 'search',
  defaults: { timeoutS: 30, numWorkers: 8 },
  config: Config,
  build: (options, { env, limits }) => {
    let index: PassageIndex | null = null;
    if (!options.retrieval_service_url) {
      const path = options.corpus
        ? isAbsolute(options.corpus)
          ? options.corpus
          : resolve(env.baseDir, options.corpus)
        : SAMPLE_CORPUS_PATH;
      index = new PassageIndex(loadCorpus(path));
    }
    const retrieve = async (queries: string[], signal: AbortSignal): Promise<Passage[][]> => {
      if (index)
        return queries.map((q) => index.search(q, options.topk).map((h: RetrievedPassage) => h.document));
      const raw = await fetchJson(options.retrieval_service_url!, {
        body: { queries, topk: options.topk, return_scores: true },
        signal,
        maxRetries: limits.maxRetries,
        retryBaseMs: limits.retryBaseMs,
      });
      const r = RetrieveResponseSchema.safeParse(raw);
      if (!r.success)
        throw new ToolFailure('http_error', 'the retrieval service answered in an unexpected shape');
      return r.data.result.map((docs) =>
        docs.map((d) =>
          'document' in d
            ? { id: String(d.document.id ?? ''), contents: d.document.contents }
            : { id: String(d.id ?? ''), contents: d.contents },
        ),
      );
    };
    return {
      tools: [
        {
          schema: {
            type: 'function',
            function: {
              name: 'search',
              description:
                'Search an encyclopedia for passages relevant to each query; returns the top passages per query.',
              parameters: {
                type: 'object',
                properties: {
                  query_list: {
                    type: 'array',
                    items: { type: 'string' },
                    minItems: 1,
                    maxItems: MAX_QUERIES,
                    description: 'One or more search queries.',
                  },
                },
                required: ['query_list'],
                additionalProperties: false,
              },
            },
          },
          execute: async (args, ctx) => {
            const queries = (args.query_list as string[]).map((q) => q.trim());
            if (queries.some((q) => q === ''))
              throw new ToolFailure('invalid_arguments', 'query_list contains an empty query');
            if (queries.some((q) => q.length > 2000))
              throw new ToolFailure('invalid_arguments', 'a query is longer than 2000 characters');
            return formatPassages(await retrieve(queries, ctx.signal));
          },
        },
      ],
    };
  },
});
