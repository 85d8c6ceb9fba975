import { describe, expect, it } from 'vitest';
import { truncateToolOutput } from '#shared/tools/truncate';

describe('truncateToolOutput', () => {
  const text = 'abcdefghijklmnopqrstuvwxyz'.repeat(4); // 104 chars

  it('leaves text within the limit alone', () => {
    expect(truncateToolOutput('short', 5, 'middle')).toEqual({ text: 'short', truncated: false });
  });

  it('right: keeps the start, marker at the end, total within max', () => {
    const r = truncateToolOutput(text, 60, 'right');
    // marker "\n[... 104 chars truncated ...]" is 30 chars -> 30 chars of text kept; 104 - 30 = 74 removed.
    expect(r.text).toBe(`${text.slice(0, 30)}\n[... 74 chars truncated ...]`);
    expect(r.text.length).toBeLessThanOrEqual(60);
    expect(r.truncated).toBe(true);
  });

  it('left: keeps the end, marker at the start', () => {
    const r = truncateToolOutput(text, 60, 'left');
    expect(r.text).toBe(`[... 74 chars truncated ...]\n${text.slice(-30)}`);
  });

  it('middle: keeps both ends around the marker', () => {
    const r = truncateToolOutput(text, 60, 'middle');
    // marker "\n[... 104 chars truncated ...]\n" is 31 chars -> budget 29: head 15, tail 14, 75 removed.
    expect(r.text).toBe(`${text.slice(0, 15)}\n[... 75 chars truncated ...]\n${text.slice(-14)}`);
    expect(r.text.length).toBeLessThanOrEqual(60);
  });

  it('counts tokens when a counter is given', () => {
    const words = Array.from({ length: 50 }, (_, i) => `w${i}`).join(' ');
    const countTokens = (s: string) => s.split(/\s+/).filter(Boolean).length;
    const r = truncateToolOutput(words, 20, 'right', countTokens);
    // marker "[... 50 tokens truncated ...]" is 5 "words" -> 15 words kept; 50 - 15 = 35 removed.
    expect(r.text).toBe(`${words.split(' ').slice(0, 15).join(' ')} \n[... 35 tokens truncated ...]`);
    expect(countTokens(r.text)).toBeLessThanOrEqual(20);
  });

  it('cuts bare when the marker itself does not fit', () => {
    expect(truncateToolOutput(text, 10, 'middle')).toEqual({ text: text.slice(0, 10), truncated: true });
  });

  it('never splits a surrogate pair', () => {
    const emoji = '😀'.repeat(40); // 80 UTF-16 units
    const r = truncateToolOutput(emoji, 41, 'right');
    expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/.test(r.text)).toBe(false); // no lone high surrogate
    expect(r.text.startsWith('😀')).toBe(true);
  });

  it('rejects a negative max', () => {
    expect(() => truncateToolOutput('x', -1, 'left')).toThrow(/non-negative/);
  });
});
