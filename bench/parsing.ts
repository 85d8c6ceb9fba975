// Tool-call parser speed: the hermes parser against references measured in the same process.
// Run: npx tsx bench/parsing.ts   Prints µs per parse and the ratios.
//   typical turn: ~2 KB of reasoning, two calls, an answer line. Reference: the regex approach of the
//                 reference Hermes parsers (`<tool_call>(.*?)</tool_call>` + JSON.parse per match).
//   hostile:      1 MiB of unclosed `<tool_call>` tags. Reference: one `indexOf` pass over the same text, the
//                 floor for any parser that reads its input; the regex approach is timed at 64 KiB only,
//                 since it rescans the rest of the text per tag (quadratic).
import { hermesParser } from '#shared/parsing/hermes';

const REGEX = /<tool_call>(.*?)<\/tool_call>/gs;
function regexParse(text: string): unknown[] {
  const calls: unknown[] = [];
  for (const m of text.matchAll(REGEX)) {
    try {
      calls.push(JSON.parse(m[1]!));
    } catch {
      // a malformed call: the reference parsers skip it
    }
  }
  return calls;
}

function time(label: string, minMs: number, fn: () => unknown): number {
  fn(); // warm-up
  let reps = 0;
  const t0 = performance.now();
  let elapsed = 0;
  while (elapsed < minMs) {
    fn();
    reps++;
    elapsed = performance.now() - t0;
  }
  const us = (elapsed * 1000) / reps;
  console.log(`${label.padEnd(44)} ${us.toFixed(1).padStart(10)} µs`);
  return us;
}

const call = (expression: string) =>
  `<tool_call>\n${JSON.stringify({ name: 'calculator', arguments: { expression } })}\n</tool_call>`;
const typical = `${'Let me think about the problem step by step. '.repeat(45)}\n${call('17*23')}\n${call('(391 + 9) / 4')}\nThen the answer follows.`;
if (hermesParser.parse(typical).calls.length !== 2 || regexParse(typical).length !== 2)
  throw new Error('bad bench input');

const hostile = '<tool_call>'.repeat(Math.ceil((1 << 20) / 11));
const hostileSmall = '<tool_call>'.repeat(Math.ceil((64 << 10) / 11));

console.log(`typical turn: ${typical.length} chars, 2 calls`);
const tHermes = time('hermes parser', 1000, () => hermesParser.parse(typical));
const tRegex = time('reference: regex + JSON.parse', 1000, () => regexParse(typical));
console.log(`ratio hermes / regex reference: ${(tHermes / tRegex).toFixed(2)}x`);

console.log(`\nhostile: ${hostile.length} chars of unclosed <tool_call>`);
const tHostile = time('hermes parser', 1000, () => hermesParser.parse(hostile));
const tScan = time('reference: one indexOf scan', 1000, () => hostile.indexOf('</tool_call>'));
console.log(`ratio hermes / one scan: ${(tHostile / tScan).toFixed(2)}x`);
const tSmall = time(`hermes parser, ${hostileSmall.length} chars`, 500, () =>
  hermesParser.parse(hostileSmall),
);
const tRegexSmall = time(`regex reference, ${hostileSmall.length} chars`, 2000, () =>
  regexParse(hostileSmall),
);
console.log(`ratio regex reference / hermes at 64 KiB: ${(tRegexSmall / tSmall).toFixed(0)}x`);
