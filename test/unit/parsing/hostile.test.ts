// Hostile input must parse in linear time. Each input below is ~8 MiB with ~10^5-10^6 tags and must give the
// right errors; the last tests count the characters the parse examines (an implementation that rescans the rest
// of the text per tag examines ~N * n / 2 of them, ~10^4 times the input's length here), not its time.
import { describe, expect, it } from 'vitest';
import { parseToolCalls } from '#shared/parsing/index';
import { expectLinear } from '../../helpers/linear.ts';

const MiB = 1 << 20;
const repeatTo = (unit: string, chars: number) => unit.repeat(Math.ceil(chars / unit.length));

describe('hermes parser on hostile input', () => {
  it('megabytes of unclosed opening tags: one error, nothing executed', () => {
    const text = repeatTo('<tool_call>', 8 * MiB); // ~763k tags
    const r = parseToolCalls(text);
    expect(r.calls).toEqual([]);
    // Every tag but the last is followed by another opening tag before any closing one, and the last has
    // no closing tag at all; with no </tool_call> anywhere the parser stops at the first one.
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]?.message).toBe('unclosed <tool_call>: no </tool_call> follows');
  });

  it('megabytes of opening tags closed once at the very end: one error per tag, in linear time', () => {
    const opens = repeatTo('<tool_call>', 4 * MiB);
    const n = opens.length / '<tool_call>'.length;
    const r = parseToolCalls(`${opens}</tool_call>`);
    // The first n-1 tags are interrupted by the next one; the last has an empty body.
    expect(r.errors).toHaveLength(n);
    expect(r.errors[n - 2]?.message).toMatch(/another <tool_call> starts before/);
    expect(r.errors[n - 1]?.message).toMatch(/empty <tool_call>/);
    expect(r.calls).toEqual([]);
  });

  it('megabytes of stray closing tags', () => {
    const text = repeatTo('x</tool_call>', 8 * MiB);
    const r = parseToolCalls(text);
    expect(r.errors).toHaveLength(text.length / 13);
    expect(r.content.length).toBe(text.length);
  });

  it('an unterminated string or object spanning megabytes', () => {
    for (const body of [
      `{"name": "a", "arguments": {"x": "${'y'.repeat(8 * MiB)}`,
      repeatTo('{"a":', 8 * MiB),
    ]) {
      const r = parseToolCalls(`<tool_call>${body}</tool_call> tail`);
      expect(r.calls).toEqual([]);
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]?.message).toMatch(/invalid JSON/);
      expect(r.errors[0]?.snippet.length).toBeLessThanOrEqual(201);
      expect(r.content).toBe('tail');
    }
  });

  it('deeply nested arguments are a parse error, not a stack overflow later', () => {
    // JSON.parse takes them; JSON.stringify (sending the call on) and validation would throw a RangeError.
    const depth = 2 * MiB;
    const r = parseToolCalls(
      `<tool_call>{"name": "a", "arguments": {"x": ${'['.repeat(depth)}${']'.repeat(depth)}}}</tool_call> ok`,
    );
    expect(r.calls).toEqual([]);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]?.message).toBe('"arguments" of a nest deeper than 64 levels');
    expect(r.errors[0]?.offset).toBe('<tool_call>{"name": '.length);
    expect(r.content).toBe('ok');
  });

  it('alternating quotes and tags (string state must not be rescanned)', () => {
    // 2 MiB is enough here (~87k tags: ~10^11 steps for a rescanning parser); each error builds a SyntaxError.
    const text = `<tool_call>"${repeatTo('</tool_call><tool_call>"', 2 * MiB)}`;
    const r = parseToolCalls(text);
    expect(r.calls).toEqual([]);
    expect(r.errors.length).toBeGreaterThan(80_000);
    expect(r.errors.every((e) => /invalid JSON|unclosed/.test(e.message))).toBe(true);
  });

  it('hundreds of thousands of valid calls', () => {
    const unit = '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>\n';
    const n = Math.ceil((8 * MiB) / unit.length);
    const r = parseToolCalls(unit.repeat(n));
    expect(r.calls).toHaveLength(n);
    expect(r.errors).toEqual([]);
  });

  it.each([
    ['unclosed opening tags', '<tool_call>'],
    ['opening tags closed once at the end', '<tool_call>', '</tool_call>'],
    ['stray closing tags', 'x</tool_call>'],
    ['alternating quotes and tags', '</tool_call><tool_call>"', '', '<tool_call>"'],
    ['valid calls', '<tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call>\n'],
  ])('%s: each character is examined a bounded number of times', (_name, unit, tail = '', head = '') => {
    const text = `${head}${repeatTo(unit, MiB)}${tail}`;
    expectLinear(() => parseToolCalls(text), text.length);
  });
});
