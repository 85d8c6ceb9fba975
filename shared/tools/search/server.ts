// `toolrl search serve`: the built-in retriever over HTTP with Search-R1's `/retrieve` API.
import { z } from 'zod';
import { HttpError, type RunningServer, type ServeOptions, serveJson } from '../serve.ts';
import { MAX_QUERIES, MAX_TOPK, type PassageIndex } from './index.ts';

export const RetrieveRequestSchema = z.object({
  queries: z.array(z.string().max(2000)).min(1).max(MAX_QUERIES),
  topk: z.number().int().positive().max(MAX_TOPK).optional(),
  return_scores: z.boolean().default(false),
});

export function serveRetrieval(
  index: PassageIndex,
  opts: ServeOptions & { topk?: number } = {},
): Promise<RunningServer> {
  return serveJson(
    {
      '/retrieve': (body) => {
        const r = RetrieveRequestSchema.safeParse(body);
        if (!r.success) {
          const where = r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; ');
          throw new HttpError(422, { detail: where });
        }
        return index.retrieve(r.data, opts.topk ?? 3);
      },
    },
    opts,
  );
}
