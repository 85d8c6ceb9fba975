// The built-in retriever: a BM25 full-text index (MiniSearch) over a local corpus, answering
// Search-R1's `/retrieve` request shape so the in-process and HTTP paths return the same thing.
import MiniSearch from 'minisearch';
import { type Passage, splitPassage } from './corpus.ts';

export interface RetrievedPassage {
  document: Passage;
  score: number;
}

/** Search-R1's `/retrieve` body. */
export interface RetrieveRequest {
  queries: string[];
  topk?: number;
  return_scores?: boolean;
}

export const MAX_QUERIES = 32;
export const MAX_TOPK = 50;

export class PassageIndex {
  private readonly mini: MiniSearch<{ key: number; title: string; text: string }>;

  constructor(private readonly passages: Passage[]) {
    this.mini = new MiniSearch({ idField: 'key', fields: ['title', 'text'], storeFields: [] });
    this.mini.addAll(passages.map((p, key) => ({ key, ...splitPassage(p.contents) })));
  }

  get size(): number {
    return this.passages.length;
  }

  /** Top-k passages for one query, best first; a title match counts double. */
  search(query: string, topk: number): RetrievedPassage[] {
    const hits = this.mini.search(query, {
      boost: { title: 2 },
      prefix: (term) => term.length > 3,
      fuzzy: 0.1,
    });
    return hits
      .slice(0, topk)
      .map((h) => ({ document: this.passages[h.id as number]!, score: round(h.score) }));
  }

  /** Answers a `/retrieve` request: `{result: [[{document, score}] per query]}` (scores dropped unless asked). */
  retrieve(req: RetrieveRequest, defaultTopk: number): { result: unknown[][] } {
    const topk = Math.min(req.topk ?? defaultTopk, MAX_TOPK);
    const queries = req.queries.slice(0, MAX_QUERIES);
    return {
      result: queries.map((q) => {
        const hits = this.search(q, topk);
        return req.return_scores ? hits : hits.map((h) => h.document);
      }),
    };
  }
}

const round = (x: number) => Math.round(x * 1e4) / 1e4;
