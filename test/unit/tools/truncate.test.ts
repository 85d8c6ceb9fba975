// Tool-output truncation follows verl's and MindSpeed-RL's convention: `left` keeps the start with
// "...(truncated)" after it, `right` keeps the end with "(truncated)..." before it, `middle` keeps max/2 of each
// end around "...(truncated)...", lengths in characters unless tokens are asked for.
import { describe, expect, it } from 'vitest';
import { TRUNCATION_MARKERS, truncateToolOutput } from '#shared/tools/truncate';

/** verl's get_tool_response / ToolAgentLoop._call_tool, written out here as the reference. */
function verlReference(text: string, max: number, side: string): string {
  const chars = Array.from(text); // Python's len and slicing count code points
  if (chars.length <= max) return text;
  if (side === 'left') return `${chars.slice(0, max).join('')}...(truncated)`;
  if (side === 'right') return `(truncated)...${chars.slice(-max).join('')}`;
  const half = Math.floor(max / 2);
  return `${chars.slice(0, half).join('')}...(truncated)...${chars.slice(-half).join('')}`;
}

describe('truncateToolOutput (verl convention)', () => {
  const text = 'abcdefghijklmnopqrstuvwxyz'.repeat(4); // 104 chars

  it('leaves text within the limit alone', () => {
    expect(truncateToolOutput('short', 5, 'middle')).toEqual({ text: 'short', truncated: false });
    expect(truncateToolOutput('', 0, 'left')).toEqual({ text: '', truncated: false });
  });

  it('left keeps the start: text[:max] + "...(truncated)"', () => {
    const r = truncateToolOutput(text, 10, 'left');
    expect(r).toEqual({ text: 'abcdefghij...(truncated)', truncated: true });
  });

  it('right keeps the end: "(truncated)..." + text[-max:]', () => {
    const r = truncateToolOutput(text, 10, 'right');
    expect(r).toEqual({ text: '(truncated)...qrstuvwxyz', truncated: true });
  });

  it('middle keeps max // 2 of each end around "...(truncated)..."', () => {
    // max 11: 5 from the start, 5 from the end (as verl's integer halving)
    expect(truncateToolOutput(text, 11, 'middle').text).toBe('abcde...(truncated)...vwxyz');
  });

  it('matches the reference for every side and a range of limits, multi-byte text included', () => {
    const inputs = [text, '数学题答案是九百二十五。'.repeat(9), `ab😀cd😀${'é'.repeat(30)}😀`];
    // From 2 up: Python's text[-0:] is the whole text, so verl's max 0 (right) and 1 (middle) keep everything
    // after the marker; the config's limit is a positive length and such limits mean nothing.
    for (const input of inputs)
      for (const side of ['left', 'right', 'middle'] as const)
        for (const max of [2, 3, 7, 20, 33, 200])
          expect(truncateToolOutput(input, max, side).text, `${side} ${max}`).toBe(
            verlReference(input, max, side),
          );
  });

  it('counts code points, never splitting a surrogate pair', () => {
    const emoji = '😀'.repeat(40); // 40 characters, 80 UTF-16 units
    expect(truncateToolOutput(emoji, 40, 'left').truncated).toBe(false);
    const r = truncateToolOutput(emoji, 3, 'left');
    expect(r.text).toBe(`😀😀😀${TRUNCATION_MARKERS.left}`);
  });

  it('counts tokens when a counter is given (tool_response_truncate_unit: tokens)', () => {
    const words = Array.from({ length: 50 }, (_, i) => `w${i}`).join(' ');
    const countTokens = (s: string) => s.split(/\s+/).filter(Boolean).length;
    const left = truncateToolOutput(words, 20, 'left', countTokens);
    expect(left.text).toBe(`${words.split(' ').slice(0, 20).join(' ')} ...(truncated)`);
    const right = truncateToolOutput(words, 20, 'right', countTokens);
    expect(right.text).toBe(`(truncated)... ${words.split(' ').slice(-20).join(' ')}`);
    const middle = truncateToolOutput(words, 20, 'middle', countTokens);
    expect(countTokens(middle.text.replace(TRUNCATION_MARKERS.middle, ' '))).toBe(20);
    expect(middle.text.startsWith('w0 w1')).toBe(true);
    expect(middle.text.endsWith('w48 w49')).toBe(true);
  });

  it('rejects a negative max', () => {
    expect(() => truncateToolOutput('x', -1, 'left')).toThrow(/non-negative/);
  });
});
