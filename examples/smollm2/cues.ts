// The SmolLM2 example's `--restate` demonstrations (make-data.ts): before the call, each later number of the
// question is named with the words of its training phrasing that decide its operation.

/** A problem's operators: `a op1 b` or `a op1 b op2 c` (phrasings.ts's `Problem`). */
export type Kind = 'add' | 'sub' | 'mul' | 'sub-add' | 'add-sub' | 'mul-add';

// For each training phrasing (phrasings.ts's TRAIN_TEMPLATES, in the same order), the words that say what happens
// to its second and third numbers. A `--restate` demonstration writes each of those numbers with its words and
// operation before the call ("gave away 1208: minus; bought 317: plus."), so the sign sits next to the verb that
// decides it.
export const TRAIN_CUES: Record<Kind, [string, string?][]> = {
  add: [
    ['gets'],
    ['received'],
    ['collected this year'],
    ['a donor adds'],
    ['won'],
    ['a second truck carries'],
    ['picked up'],
    ['a delivery brought'],
  ],
  sub: [
    ['gave away'],
    ['shipped out'],
    ['used'],
    ['spent'],
    ['broken'],
    ['already has'],
    ['removes'],
    ['sold'],
  ],
  mul: [
    ['each box holds'],
    ['in each pack'],
    ['an hour'],
    ['in every row'],
    ['on each shelf'],
    ['per team'],
    ['in every bag'],
  ],
  'sub-add': [
    ['gave away', 'bought'],
    ['shipped out', 'received'],
    ['removed', 'put back'],
    ['used', 'made'],
    ['selling', 'ordered'],
    ['spent', 'earned'],
  ],
  'add-sub': [
    ['received', 'sold'],
    ['got from a friend', 'gave away'],
    ['a delivery brings', 'shipped out'],
    ['collected in summer', 'used'],
    ['bought more', 'broken'],
    ['won', 'spent'],
  ],
  'mul-add': [
    ['each box', 'loose'],
    ['on each shelf', 'in the back room'],
    ['in each pack', 'extra for free'],
    ['in each row', 'a separate pile'],
    ['into each carton', 'spare'],
  ],
};

// For the wider phrasings (phrasings.ts's WIDE_TEMPLATES, `--wide`, in the same order), as TRAIN_CUES.
export const WIDE_CUES: Record<Kind, [string, string?][]> = {
  add: [
    ['counted on Tuesday'],
    ['bought more'],
    ['raised at another'],
    ['borrowed'],
    ['poured in'],
    ['earned'],
  ],
  sub: [['lent'], ['threw away'], ['donated'], ['leaked out'], ['fell through a hole'], ['hands out']],
  mul: [
    ['into every basket'],
    ['on each trip'],
    ['a day'],
    ['in one basket'],
    ['sets of'],
    ['every member brings'],
  ],
  'sub-add': [
    ['lent out', 'got as a gift'],
    ['threw away', 'picked up'],
    ['unloaded', 'loaded'],
    ['donated', 'won'],
    ['leaked out', 'poured in'],
    ['handed out', 'was paid'],
  ],
  'add-sub': [
    ['loaded', 'unloaded'],
    ['picked up', 'threw away'],
    ['poured in', 'leaked out'],
    ['got as a gift', 'lent out'],
    ['bought', 'donated'],
    ['gained', 'gave up'],
  ],
  'mul-add': [
    ['with each', 'left over'],
    ['trays of', 'extra'],
    ['every student brings', 'the teacher brings'],
    ['each time', 'one more trip'],
    ['a day', 'on the last evening'],
    ['boxes of', 'in a drawer'],
  ],
};

const OP_WORDS: Record<string, string> = { '+': 'plus', '-': 'minus', '*': 'times' };

/** "gave away 1208: minus; bought 317: plus." for `a - 1208 + 317`: each later number with its cue and operation. */
export function restatement(cues: readonly [string, string?], expr: string): string {
  const t = expr.split(' ');
  const parts = [`${cues[0]} ${t[2]}: ${OP_WORDS[t[1]!]}`];
  if (t.length === 5) parts.push(`${cues[1]} ${t[4]}: ${OP_WORDS[t[3]!]}`);
  return `${parts.join('; ')}.`;
}
