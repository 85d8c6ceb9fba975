// The search tool: the built-in BM25 index in-process, and the same index behind `toolrl search serve`
// reached through the Search-R1 client, must answer alike.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildToolRegistry } from '#shared/tools/registry';
import { loadCorpus, parseCorpus, SAMPLE_CORPUS_PATH } from '#shared/tools/search/corpus';
import { PassageIndex } from '#shared/tools/search/index';
import { formatPassages } from '#shared/tools/search/tool';
import { type CliServer, startCliServer } from './cli-server.ts';

const corpusDir = mkdtempSync(join(tmpdir(), 'corpus-'));
const corpusFile = join(corpusDir, 'c.jsonl');
writeFileSync(
  corpusFile,
  [
    { id: 'a', contents: '"Lake Baikal"\nLake Baikal in Siberia is the deepest lake in the world.' },
    { id: 'b', title: 'Caspian Sea', text: 'The Caspian Sea is the largest inland body of water.' },
    {
      id: 'c',
      contents: '"Lake Superior"\nLake Superior is the largest of the Great Lakes of North America.',
    },
  ]
    .map((d) => JSON.stringify(d))
    .join('\n'),
);

describe('corpus and index', () => {
  it('reads Search-R1 JSONL and names the bad line', () => {
    expect(parseCorpus('{"id": 1, "contents": "\\"T\\"\\nx"}\n\n{"title": "U", "text": "y"}')).toEqual([
      { id: '1', contents: '"T"\nx' },
      { id: '1', contents: '"U"\ny' },
    ]);
    expect(() => parseCorpus('{"id": 1, "contents": "x"}\n{"id": 2, "contents": ', 'c.jsonl')).toThrow(
      /^c.jsonl:2: not valid JSON/,
    );
    expect(() => parseCorpus('{"id": 1, "text": "x"}', 'c.jsonl')).toThrow(/^c.jsonl:1: expected/);
    expect(() => parseCorpus('\n', 'c.jsonl')).toThrow(/no passages/);
  });

  it('ranks the passage that matches best first, title matches counting more', () => {
    const index = new PassageIndex(loadCorpus(corpusFile));
    expect(index.search('deepest lake', 3)[0]?.document.id).toBe('a');
    expect(index.search('largest inland water', 3)[0]?.document.id).toBe('b');
    expect(index.search('Superior', 1).map((h) => h.document.id)).toEqual(['c']);
    expect(index.search('xylophone', 3)).toEqual([]);
  });

  it('formats passages as Search-R1 does', () => {
    expect(formatPassages([[{ id: 'a', contents: '"T"\nbody' }], []])).toBe(
      'Doc 1(Title: T) body\n---\nNo results.',
    );
  });

  it('ships a sample corpus', () => {
    expect(loadCorpus(SAMPLE_CORPUS_PATH).length).toBeGreaterThanOrEqual(30);
  });
});

describe('search tool: in-process and over HTTP', () => {
  let server: CliServer;
  beforeAll(async () => {
    server = await startCliServer(['search', 'serve', '--corpus', corpusFile]);
  });
  afterAll(() => server.stop());

  it('answers the same through the built-in index and the retrieval service', async () => {
    const local = await buildToolRegistry({
      tools: [{ kind: 'search', config: { corpus: corpusFile, topk: 2 } }],
    });
    const remote = await buildToolRegistry({
      tools: [{ kind: 'search', config: { retrieval_service_url: server.url, topk: 2 } }],
    });
    const call = { name: 'search', arguments: { query_list: ['deepest lake', 'Caspian'] } };
    const a = await local.call(call);
    const b = await remote.call(call);
    expect(a.ok).toBe(true);
    expect(a.output).toMatch(
      /^Doc 1\(Title: Lake Baikal\) Lake Baikal in Siberia is the deepest lake in the world\./,
    );
    expect(a.output).toContain('\n---\nDoc 1(Title: Caspian Sea)');
    expect(b).toEqual(a);
  });

  it("speaks Search-R1's /retrieve and rejects bad requests with 422", async () => {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ queries: ['Superior'], topk: 1, return_scores: true }),
    });
    const body = (await res.json()) as { result: Array<Array<{ document: { id: string }; score: number }>> };
    expect(body.result[0]?.[0]?.document.id).toBe('c');
    expect(body.result[0]?.[0]?.score).toBeGreaterThan(0);
    const bad = await fetch(server.url, { method: 'POST', body: JSON.stringify({ query: 'x' }) });
    expect(bad.status).toBe(422);
  });

  it('reports an unreachable service as an http_error result', async () => {
    const reg = await buildToolRegistry({
      tools: [
        { kind: 'search', config: { retrieval_service_url: 'http://127.0.0.1:9/retrieve', max_retries: 0 } },
      ],
    });
    const r = await reg.call({ name: 'search', arguments: { query_list: ['x'] } });
    expect(r.error?.type).toBe('http_error');
    expect(r.error?.message).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);
  });
});
