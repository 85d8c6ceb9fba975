// Reading the final answer out of a model's last turn: `<answer>…</answer>` (Search-R1), `\boxed{…}` (math,
// ReTool), a "Final answer: …" / "答案是 …" line, the value of a closing `expr = value`, or the whole content.
// Every extractor is a single forward scan.
import { z } from 'zod';

/**
 * How a reward finds the answer; `auto` tries answer tag, then boxed, then a final-answer line (English or Chinese
 * lead-in), then an `expr = value` conclusion, then the content.
 */
export const AnswerFormatSchema = z.enum(['auto', 'answer_tag', 'boxed', 'final_answer', 'content']);
export type AnswerFormat = z.infer<typeof AnswerFormatSchema>;

/** The argument of the last `\boxed{…}` (or `\fbox{…}`, or `\boxed 5`), braces balanced; null when none. */
export function lastBoxed(text: string): string | null {
  const boxed = text.lastIndexOf('\\boxed');
  const fbox = text.lastIndexOf('\\fbox');
  const at = Math.max(boxed, fbox);
  if (at < 0) return null;
  const afterName = at + (at === boxed ? '\\boxed'.length : '\\fbox'.length);
  let i = afterName;
  while (text[i] === ' ') i++;
  if (text[i] !== '{') {
    // `\boxed 5`: a space must separate the argument, or this was some other macro such as `\boxedtext`.
    const bare = /^[^\s$]+/.exec(text.slice(i, i + 200));
    return bare && i > afterName ? bare[0] : null;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const ch = text[j];
    if (ch === '{') depth++;
    else if (ch === '}' && --depth === 0) return text.slice(i + 1, j).trim();
  }
  return null;
}

/** The text of the last `<answer>…</answer>`; null when there is no closed answer tag. */
export function answerTag(text: string): string | null {
  const open = text.lastIndexOf('<answer>');
  if (open < 0) return null;
  const close = text.indexOf('</answer>', open);
  return close < 0 ? null : text.slice(open + '<answer>'.length, close).trim();
}

/**
 * Lead-ins of a final answer: English ("Final answer:", "The answer is") and Chinese ("答案是", "答案：",
 * "最终答案为", "结果是", "等于"), as the seeds' models (one written in Chinese) conclude.
 */
const FINAL_LINE =
  /(?:\b(?:final\s+answer|answer)\s*(?:is\s*:?|:)|(?:最终答案|答案|结果|结论)\s*(?:(?:是|为)\s*[：:]?|[：:])|等于)\s*([^\n]*\S)/gi;

/** A Chinese sentence or clause ends at its full stop or comma: what follows is no longer the answer ("答案是 925，因为…"). */
const SENTENCE_END = /[。！？；，]/;

/** An answer without markdown emphasis, a closing sentence mark or a final period. */
function cleanAnswer(raw: string): string | null {
  const cut = raw.split(SENTENCE_END)[0] ?? '';
  const cleaned = cut
    .replace(/^[*_\s]+|[*_\s]+$/g, '')
    .replace(/[.,，、]$/, '')
    .replace(/^[*_\s]+|[*_\s]+$/g, '')
    .trim();
  return cleaned === '' ? null : cleaned;
}

/** The rest of the last line saying "Final answer: X" / "The answer is X" / "答案是 X", cleaned (see cleanAnswer). */
export function finalAnswerLine(text: string): string | null {
  let last: string | null = null;
  for (const m of text.matchAll(FINAL_LINE)) last = m[1] ?? null;
  return last === null ? null : cleanAnswer(last);
}

/**
 * The value of the last `expr = value` ("25 * 37 = 925", "所以 25 × 37 = 925。"): what follows the last `=`
 * of the last line that has one (not `==`, `<=`, `>=`, `!=`), cleaned; null when there is none or it is empty.
 */
export function equationValue(text: string): string | null {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    const eq = lastAssignment(line);
    if (eq < 0) continue;
    return cleanAnswer(line.slice(eq + 1).replace(/^\s*\$+|\$+\s*$/g, ''));
  }
  return null;
}

/** The index of the line's last `=` that is an equals sign rather than part of `==`, `<=`, `>=` or `!=`. */
function lastAssignment(line: string): number {
  for (let i = line.lastIndexOf('='); i >= 0; i = i > 0 ? line.lastIndexOf('=', i - 1) : -1) {
    const before = i > 0 ? line[i - 1]! : '';
    if (line[i + 1] !== '=' && !['=', '<', '>', '!'].includes(before)) return i;
  }
  return -1;
}

/** The answer in the given format, or null when the text has none in that format. */
export function extractAnswer(text: string, format: AnswerFormat = 'auto'): string | null {
  switch (format) {
    case 'answer_tag':
      return answerTag(text);
    case 'boxed':
      return lastBoxed(text);
    case 'final_answer':
      return finalAnswerLine(text);
    case 'content':
      return text.trim() === '' ? null : text.trim();
    case 'auto':
      return (
        answerTag(text) ??
        lastBoxed(text) ??
        finalAnswerLine(text) ??
        equationValue(text) ??
        extractAnswer(text, 'content')
      );
  }
}

/**
 * The golden answers in a ground truth: a string or number, a list of them, or an object holding them under
 * `target` (Search-R1 / NQ / HotpotQA rows), `answers`, `answer` or `ground_truth`.
 */
export function goldAnswers(groundTruth: unknown): string[] {
  if (groundTruth === null || groundTruth === undefined) return [];
  if (typeof groundTruth === 'string') return [groundTruth];
  if (typeof groundTruth === 'number' || typeof groundTruth === 'bigint') return [String(groundTruth)];
  if (Array.isArray(groundTruth)) return groundTruth.flatMap(goldAnswers);
  if (typeof groundTruth === 'object') {
    const o = groundTruth as Record<string, unknown>;
    for (const key of ['target', 'answers', 'answer', 'ground_truth'])
      if (key in o) return goldAnswers(o[key]);
  }
  return [];
}
