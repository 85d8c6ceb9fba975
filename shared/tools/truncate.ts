// Cuts a tool result to `max_tool_response_length` on the side `tool_response_truncate_side` names,
// leaving a visible marker; lengths are tokens when a counter is given, UTF-16 characters otherwise.

export type TruncateSide = 'left' | 'right' | 'middle';

export interface Truncated {
  text: string;
  truncated: boolean;
}

/**
 * `right` keeps the start, `left` keeps the end, `middle` keeps both ends. The result, marker
 * included, fits in `max` whenever the marker itself does; below that the text is cut bare.
 */
export function truncateToolOutput(
  text: string,
  max: number,
  side: TruncateSide,
  countTokens?: (s: string) => number,
): Truncated {
  if (!Number.isInteger(max) || max < 0) throw new Error(`max must be a non-negative integer, got ${max}`);
  const measure = countTokens ?? ((s: string) => s.length);
  const total = measure(text);
  if (total <= max) return { text, truncated: false };
  const unit = countTokens ? 'tokens' : 'chars';
  // Worst-case marker (the removed count has at most as many digits as `total`) fixes the budget.
  const marker = (n: number) => {
    const core = `[... ${n} ${unit} truncated ...]`;
    return side === 'right' ? `\n${core}` : side === 'left' ? `${core}\n` : `\n${core}\n`;
  };
  const budget = max - measure(marker(total));
  if (budget <= 0) return { text: takeHead(text, max, measure), truncated: true };
  if (side === 'right') {
    const head = takeHead(text, budget, measure);
    return { text: head + marker(total - measure(head)), truncated: true };
  }
  if (side === 'left') {
    const tail = takeTail(text, budget, measure);
    return { text: marker(total - measure(tail)) + tail, truncated: true };
  }
  const head = takeHead(text, Math.ceil(budget / 2), measure);
  const tail = takeTail(text.slice(head.length), Math.floor(budget / 2), measure);
  return { text: head + marker(total - measure(head) - measure(tail)) + tail, truncated: true };
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
