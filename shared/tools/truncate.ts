// Cuts a tool result to `max_tool_response_length` the way verl and MindSpeed-RL do: `left` keeps the start
// (`text[:max] + "...(truncated)"`), `right` keeps the end (`"(truncated)..." + text[-max:]`), `middle` keeps
// max/2 of each end around `...(truncated)...`. Lengths are characters (Unicode code points, as Python's `len`
// counts them), or tokens when a counter is given (`tool_response_truncate_unit: tokens`).

export type TruncateSide = 'left' | 'right' | 'middle';

export interface Truncated {
  text: string;
  truncated: boolean;
}

/** verl's markers, verbatim: a model trained there has seen exactly these. */
export const TRUNCATION_MARKERS = {
  left: '...(truncated)',
  right: '(truncated)...',
  middle: '...(truncated)...',
} as const;

/**
 * `max` units of the text are kept and the marker is added on top of them, as in verl (so the result is longer
 * than `max` by the marker). A text within `max` is returned as it is.
 */
export function truncateToolOutput(
  text: string,
  max: number,
  side: TruncateSide,
  countTokens?: (s: string) => number,
): Truncated {
  if (!Number.isInteger(max) || max < 0) throw new Error(`max must be a non-negative integer, got ${max}`);
  if (!countTokens) return truncateCharacters(text, max, side);
  const measure = countTokens;
  if (text === '' || measure(text) <= max) return { text, truncated: false };
  if (side === 'left')
    return { text: takeHead(text, max, measure) + TRUNCATION_MARKERS.left, truncated: true };
  if (side === 'right')
    return { text: TRUNCATION_MARKERS.right + takeTail(text, max, measure), truncated: true };
  const half = Math.floor(max / 2);
  const head = takeHead(text, half, measure);
  const tail = takeTail(text.slice(head.length), half, measure);
  return { text: head + TRUNCATION_MARKERS.middle + tail, truncated: true };
}

function truncateCharacters(text: string, max: number, side: TruncateSide): Truncated {
  // Code points, never halves of a surrogate pair; the UTF-16 length bounds the count, so short texts skip this.
  if (text.length <= max) return { text, truncated: false };
  const chars = Array.from(text);
  if (chars.length <= max) return { text, truncated: false };
  const head = (n: number) => chars.slice(0, n).join('');
  const tail = (n: number) => (n === 0 ? '' : chars.slice(-n).join(''));
  if (side === 'left') return { text: head(max) + TRUNCATION_MARKERS.left, truncated: true };
  if (side === 'right') return { text: TRUNCATION_MARKERS.right + tail(max), truncated: true };
  const half = Math.floor(max / 2);
  return { text: head(half) + TRUNCATION_MARKERS.middle + tail(half), truncated: true };
}

/** Longest prefix with measure <= budget. */
function takeHead(text: string, budget: number, measure: (s: string) => number): string {
  const n = largestFitting(text.length, budget, (k) => measure(safeSlice(text, 0, k)) <= budget);
  return safeSlice(text, 0, n);
}

/** Longest suffix with measure <= budget. */
function takeTail(text: string, budget: number, measure: (s: string) => number): string {
  const n = largestFitting(text.length, budget, (k) => measure(safeSlice(text, text.length - k)) <= budget);
  return safeSlice(text, text.length - n);
}

/**
 * The largest n in [0, len] with fits(n), for a fits that holds up to some n and fails past it (token counts
 * grow with the text). Gallops up from `start` (a budget of b tokens rarely spans more than a few times b
 * characters), then bisects: the texts measured stay near the budget's size, however long the output (a tool
 * may print a megabyte; bisecting over all of it would tokenise the whole output a dozen times).
 */
function largestFitting(len: number, start: number, fits: (n: number) => boolean): number {
  let lo = 0;
  let hi = len;
  for (let probe = Math.max(1, start); probe < len; probe *= 2) {
    if (!fits(probe)) {
      hi = probe - 1;
      break;
    }
    lo = probe;
  }
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Slices without splitting a surrogate pair (a lone half would be invalid UTF-16 in the prompt). */
function safeSlice(text: string, start: number, end = text.length): string {
  const isLow = (i: number) => i > 0 && i < text.length && (text.charCodeAt(i) & 0xfc00) === 0xdc00;
  let s = start;
  let e = end;
  if (isLow(s)) s += 1;
  if (isLow(e)) e -= 1;
  return text.slice(s, Math.max(s, e));
}
