// Reads a retrieval corpus in Search-R1's JSONL form: one `{"id", "contents"}` per line, where
// `contents` is `"Title"\ntext` (the wiki-18 dump's layout); `{"id", "title", "text"}` is accepted too.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

export interface Passage {
  id: string;
  /** Search-R1's field: the title on the first line, the text after it. */
  contents: string;
}

export const SAMPLE_CORPUS_PATH = fileURLToPath(new URL('./sample-corpus.jsonl', import.meta.url));

const LineSchema = z.union([
  z.object({ id: z.union([z.string(), z.number()]).optional(), contents: z.string() }),
  z.object({ id: z.union([z.string(), z.number()]).optional(), title: z.string(), text: z.string() }),
]);

/** Parses JSONL text; a bad line is an error naming the file and line number. */
export function parseCorpus(text: string, source = 'corpus'): Passage[] {
  const passages: Passage[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]?.trim();
    if (!line) continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (err) {
      throw new Error(`${source}:${i + 1}: not valid JSON: ${(err as Error).message}`);
    }
    const r = LineSchema.safeParse(json);
    if (!r.success)
      throw new Error(`${source}:${i + 1}: expected {"id", "contents"} or {"id", "title", "text"}`);
    const row = r.data;
    const contents = 'contents' in row ? row.contents : `"${row.title}"\n${row.text}`;
    passages.push({ id: row.id === undefined ? String(passages.length) : String(row.id), contents });
  }
  if (passages.length === 0) throw new Error(`${source}: the corpus has no passages`);
  return passages;
}

export function loadCorpus(path: string): Passage[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`cannot read corpus ${path}: ${(err as Error).message}`);
  }
  return parseCorpus(text, path);
}

/** Splits `contents` into title and text the way Search-R1 formats a passage. */
export function splitPassage(contents: string): { title: string; text: string } {
  const nl = contents.indexOf('\n');
  const first = nl < 0 ? contents : contents.slice(0, nl);
  return { title: first.replace(/^"|"$/g, ''), text: nl < 0 ? '' : contents.slice(nl + 1) };
}
