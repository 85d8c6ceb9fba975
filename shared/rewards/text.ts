// Answer normalisation for exact match in the SQuAD / Search-R1 tradition: case, punctuation, articles and
// whitespace do not count.

const PUNCTUATION = /[\p{P}$+<=>^`|~]/gu;
const ARTICLES = /\b(?:a|an|the)\b/g;

export function normaliseText(s: string): string {
  return s
    .normalize('NFKC')
    .toLowerCase()
    .replace(PUNCTUATION, '')
    .replace(ARTICLES, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Lower case and single spaces only: for looking an answer up inside a tool's output, where "3.14" must stay. */
export const foldText = (s: string): string => s.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
