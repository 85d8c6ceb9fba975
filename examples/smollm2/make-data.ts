// Writes the SmolLM2 example's data (deterministic): word problems with one or two operations on multi-digit
// numbers, which SmolLM2-135M-Instruct gets wrong without a calculator ("347 + 281 = 717"), as train/val Parquet
// datasets, and mixed-quality SFT demonstrations (messages and tools as JSON strings) for the warm start.
//
// The model has to turn the words into the expression (`gave away` is a minus, `each of 37 crates holds 48` a
// product) and copy four-digit numbers into the call. Validation asks in phrasings that training never uses
// (a held-out quarter of every list of wording parts, below), so its accuracy measures the skill, not the sentences.
//
// The demonstrations teach the call format and reading the result, but not reliably when and how to call: like
// demonstrations gathered from people, some answer from memory without the tool (and are wrong) and some write
// the wrong expression (an operator swapped, a digit miscopied) and then faithfully box the wrong result. The
// RL stage's outcome reward (the `toolcall` reward pays a call only when its result reaches the answer) is what
// teaches the model to call every time and to write the right expression.
// Run: npx tsx examples/smollm2/make-data.ts [OUT_DIR]
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRunConfig } from '#shared/config/resolve';
import { writeDataset } from '#shared/data/dataset';
import { writeParquetFile } from '#shared/data/parquet';
import { samplingStream } from '#shared/policy/rng';
import type { ChatMessage } from '#shared/schemas/chat';
import { buildToolRegistry } from '#shared/tools/registry';

/** Shares of the demonstrations: a correct call, a call with the wrong expression, no call at all. */
export const DEMONSTRATION_MIX = { correct: 0.8, wrongExpression: 0, noCall: 0.2 } as const;

const rng = samplingStream(20251129, 0, 0);
const next = () => rng.next();
const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;

/** The problem's numbers and operators: `a op1 b` or `a op1 b op2 c`, evaluated left to right. */
interface Problem {
  kind: 'add' | 'sub' | 'mul' | 'sub-add' | 'add-sub' | 'mul-add';
  a: number;
  b: number;
  c?: number;
}

function draw(kind: Problem['kind']): Problem {
  switch (kind) {
    case 'add':
      return { kind, a: int(1000, 8999), b: int(100, 999) };
    case 'sub': {
      const a = int(2000, 9999);
      return { kind, a, b: int(100, a - 1000) };
    }
    case 'mul':
      return { kind, a: int(12, 99), b: int(102, 999) };
    case 'sub-add': {
      const a = int(2000, 9999);
      return { kind, a, b: int(100, a - 1000), c: int(100, 999) };
    }
    case 'add-sub': {
      const a = int(1000, 8999);
      const b = int(100, 999);
      return { kind, a, b, c: int(100, a + b - 100) };
    }
    case 'mul-add':
      return { kind, a: int(12, 99), b: int(102, 999), c: int(10, 99) };
  }
}

const OPS: Record<Problem['kind'], [string, string?]> = {
  add: ['+'],
  sub: ['-'],
  mul: ['*'],
  'sub-add': ['-', '+'],
  'add-sub': ['+', '-'],
  'mul-add': ['*', '+'],
};

const expression = (p: Problem, ops = OPS[p.kind]): string =>
  ops[1] === undefined ? `${p.a} ${ops[0]} ${p.b}` : `${p.a} ${ops[0]} ${p.b} ${ops[1]} ${p.c}`;

function evaluate(expr: string): number {
  const t = expr.split(' ');
  const apply = (x: number, op: string, y: number) => (op === '+' ? x + y : op === '-' ? x - y : x * y);
  if (t.length === 3) return apply(Number(t[0]), t[1]!, Number(t[2]));
  // a op b op c: multiplication first, as the calculator does
  const [a, o1, b, o2, c] = [Number(t[0]), t[1]!, Number(t[2]), t[3]!, Number(t[4])];
  if (o2 === '*' && o1 !== '*') return apply(a, o1, b * c);
  return apply(apply(a, o1, b), o2, c);
}

// The wording is built from parts (who, what, a verb phrase for what happened, a sentence frame), and a fixed quarter
// of every list of parts, drawn by a seeded shuffle rather than chosen by hand, is held out: validation questions use
// only held-out parts (a held-out frame with held-out verbs, names, objects and containers), training questions only
// the rest. Training then sees each operation in many wordings (16 ways to gain, 16 to lose, 8 one-step frames, ...),
// so what the model can learn is which words mean which operation, and validation asks in wordings it never saw.
const split = samplingStream(20251130, 0, 0);
/** The list with a seeded quarter (at least one) held out for validation. */
function holdOut<T>(items: readonly T[]): { train: T[]; val: T[] } {
  const order = items.map((item) => ({ item, key: split.next() }));
  order.sort((x, y) => x.key - y.key);
  const k = Math.max(1, Math.round(items.length / 4));
  return { train: order.slice(k).map((o) => o.item), val: order.slice(0, k).map((o) => o.item) };
}

const NAMES = holdOut([
  'Maria',
  'Tom',
  'Aisha',
  'Ken',
  'Lucia',
  'Omar',
  'Emma',
  'Ravi',
  'Nina',
  'Sam',
  'Yuki',
  'Leo',
  'Sofia',
  'Jonas',
  'Mei',
  'Diego',
  'Hana',
  'Peter',
  'Amara',
  'Felix',
]);
const THINGS = holdOut([
  'stickers',
  'marbles',
  'coins',
  'stamps',
  'books',
  'pencils',
  'apples',
  'bottles',
  'toys',
  'nails',
  'cups',
  'bricks',
  'shells',
  'cards',
  'beads',
  'screws',
  'buttons',
  'tickets',
  'candles',
  'postcards',
]);
/** Containers for products: [singular, plural]. */
const CONTAINERS = holdOut<[string, string]>([
  ['box', 'boxes'],
  ['crate', 'crates'],
  ['bag', 'bags'],
  ['jar', 'jars'],
  ['sack', 'sacks'],
  ['carton', 'cartons'],
  ['basket', 'baskets'],
  ['tin', 'tins'],
  ['drawer', 'drawers'],
  ['bin', 'bins'],
  ['pack', 'packs'],
  ['case', 'cases'],
]);
// What happened, as a past-tense verb phrase around the amount X: a gain adds it, a loss takes it away.
const GAINS = holdOut([
  'bought X more',
  'found X more',
  'received X more',
  'won X more',
  'collected X more',
  'picked up X more',
  'earned X more',
  'was given X more',
  'was given another X',
  'got X more from a friend',
  'was sent X more',
  'made X more',
  'ordered X more',
  'was handed X more',
  'added X more',
  'traded for X more',
]);
const LOSSES = holdOut([
  'gave away X',
  'lost X',
  'sold X',
  'used X',
  'spent X',
  'threw away X',
  'donated X',
  'shipped out X',
  'handed out X',
  'gave X to a friend',
  'dropped X',
  'broke X',
  'removed X',
  'traded away X',
  'mailed X to a cousin',
  'lent out X',
]);

interface Words {
  n: string;
  t: string;
  c: [string, string];
  vp: (x: number, gain: boolean) => string;
}
type Frame = (p: Problem, w: Words) => string;
const gain = (p: Problem) => p.kind === 'add' || p.kind === 'add-sub';

// One operation on a count: `a` then a gain or a loss of `b`.
const ONE_STEP = holdOut<Frame>([
  (p, w) => `${w.n} had ${p.a} ${w.t} and ${w.vp(p.b, gain(p))}. How many ${w.t} does ${w.n} have now?`,
  (p, w) => `${w.n} had ${p.a} ${w.t}. Then ${w.n} ${w.vp(p.b, gain(p))}. How many ${w.t} does ${w.n} have?`,
  (p, w) =>
    `${w.n} started with ${p.a} ${w.t} and ${w.vp(p.b, gain(p))}. How many ${w.t} does ${w.n} have at the end?`,
  (p, w) =>
    `At first ${w.n} owned ${p.a} ${w.t}. Later ${w.n} ${w.vp(p.b, gain(p))}. How many ${w.t} does ${w.n} own now?`,
  (p, w) =>
    `${w.n} kept ${p.a} ${w.t} in a ${w.c[0]}. One day ${w.n} ${w.vp(p.b, gain(p))}. How many ${w.t} are in the ${w.c[0]} now?`,
  (p, w) =>
    `${w.n} had a collection of ${p.a} ${w.t}. After ${w.n} ${w.vp(p.b, gain(p))}, how many ${w.t} did ${w.n} have?`,
  (p, w) =>
    `Last week ${w.n} had ${p.a} ${w.t}. This week ${w.n} ${w.vp(p.b, gain(p))}. How many ${w.t} does ${w.n} have this week?`,
  (p, w) => `${w.n} counted ${p.a} ${w.t}, then ${w.vp(p.b, gain(p))}. What is the number of ${w.t} now?`,
]);
// Two operations: `a`, then a gain or loss of `b`, then the other of `c`.
const TWO_STEP = holdOut<Frame>([
  (p, w) =>
    `${w.n} had ${p.a} ${w.t}, ${w.vp(p.b, gain(p))} and then ${w.vp(p.c!, !gain(p))}. How many ${w.t} does ${w.n} have now?`,
  (p, w) =>
    `${w.n} started with ${p.a} ${w.t}. ${w.n} ${w.vp(p.b, gain(p))}, and later ${w.n} ${w.vp(p.c!, !gain(p))}. How many ${w.t} does ${w.n} have?`,
  (p, w) =>
    `At first ${w.n} owned ${p.a} ${w.t}. Then ${w.n} ${w.vp(p.b, gain(p))}. After that ${w.n} ${w.vp(p.c!, !gain(p))}. How many ${w.t} does ${w.n} own now?`,
  (p, w) =>
    `${w.n} had ${p.a} ${w.t}. In the morning ${w.n} ${w.vp(p.b, gain(p))}; in the afternoon ${w.n} ${w.vp(p.c!, !gain(p))}. How many ${w.t} does ${w.n} have in the evening?`,
  (p, w) =>
    `${w.n} had a collection of ${p.a} ${w.t}. ${w.n} ${w.vp(p.b, gain(p))} and ${w.vp(p.c!, !gain(p))}. How many ${w.t} are in the collection now?`,
  (p, w) =>
    `${w.n} kept ${p.a} ${w.t} in a ${w.c[0]}, ${w.vp(p.b, gain(p))}, and ${w.vp(p.c!, !gain(p))}. How many ${w.t} are in the ${w.c[0]}?`,
]);
// A product: `a` containers of `b` each.
const PRODUCT = holdOut<Frame>([
  (p, w) => `${w.n} has ${p.a} ${w.c[1]} with ${p.b} ${w.t} in each. How many ${w.t} does ${w.n} have?`,
  (p, w) => `Each of ${p.a} ${w.c[1]} holds ${p.b} ${w.t}. How many ${w.t} are there in all?`,
  (p, w) => `${w.n} buys ${p.a} ${w.c[1]} of ${p.b} ${w.t}. How many ${w.t} does ${w.n} buy?`,
  (p, w) =>
    `There are ${p.b} ${w.t} in every ${w.c[0]}, and ${w.n} has ${p.a} ${w.c[1]}. How many ${w.t} is that?`,
  (p, w) => `${p.a} ${w.c[1]} contain ${p.b} ${w.t} apiece. How many ${w.t} do they contain together?`,
  (p, w) => `${w.n} packs ${p.b} ${w.t} into each of ${p.a} ${w.c[1]}. How many ${w.t} does ${w.n} pack?`,
  (p, w) => `${p.a} children each collect ${p.b} ${w.t}. How many ${w.t} do they collect together?`,
  (p, w) => `A machine makes ${p.b} ${w.t} every hour for ${p.a} hours. How many ${w.t} does it make?`,
  (p, w) => `${p.a} ${w.c[1]} hold ${p.b} ${w.t} each. What is the total number of ${w.t}?`,
]);
// A product and a sum: `a` containers of `b` each and `c` more.
const PRODUCT_PLUS = holdOut<Frame>([
  (p, w) =>
    `${w.n} has ${p.a} ${w.c[1]} with ${p.b} ${w.t} in each and ${p.c} loose ${w.t}. How many ${w.t} does ${w.n} have in all?`,
  (p, w) =>
    `Each of ${p.a} ${w.c[1]} holds ${p.b} ${w.t}, and ${p.c} more ${w.t} lie beside them. How many ${w.t} are there?`,
  (p, w) =>
    `${w.n} buys ${p.a} ${w.c[1]} of ${p.b} ${w.t} and gets ${p.c} extra. How many ${w.t} does ${w.n} get?`,
  (p, w) =>
    `There are ${p.a} ${w.c[1]} of ${p.b} ${w.t} and a separate pile of ${p.c} ${w.t}. How many ${w.t} are there altogether?`,
  (p, w) =>
    `${p.a} ${w.c[1]} contain ${p.b} ${w.t} apiece, and ${p.c} ${w.t} are on the table. How many ${w.t} are there in total?`,
  (p, w) =>
    `${w.n} packs ${p.b} ${w.t} into each of ${p.a} ${w.c[1]} and keeps ${p.c} spare. How many ${w.t} does ${w.n} have?`,
]);

const FRAMES: Record<Problem['kind'], typeof ONE_STEP> = {
  add: ONE_STEP,
  sub: ONE_STEP,
  mul: PRODUCT,
  'sub-add': TWO_STEP,
  'add-sub': TWO_STEP,
  'mul-add': PRODUCT_PLUS,
};

const KINDS: Problem['kind'][] = ['add', 'sub', 'mul', 'sub-add', 'add-sub', 'mul-add'];

interface Question {
  text: string;
  expr: string;
  answer: number;
  problem: Problem;
}

function question(part: 'train' | 'val', kind: Problem['kind'] = pick(KINDS)): Question {
  const problem = draw(kind);
  const words: Words = {
    n: pick(NAMES[part]),
    t: pick(THINGS[part]),
    c: pick(CONTAINERS[part]),
    vp: (x, isGain) => pick(isGain ? GAINS[part] : LOSSES[part]).replace('X', String(x)),
  };
  const text = pick(FRAMES[kind][part])(problem, words);
  const expr = expression(problem);
  return { text, expr, answer: evaluate(expr), problem };
}

const row = (q: Question, index: number, split: string) => ({
  data_source: 'smollm2/word-problems',
  prompt: [{ role: 'user' as const, content: q.text }],
  ability: 'arithmetic',
  reward_model: { style: 'rule', ground_truth: String(q.answer) },
  extra_info: { index, split, expression: q.expr },
});

/** `n` with one of its digits replaced by another (never a leading zero). */
function miscopy(n: number): number {
  const digits = String(n).split('');
  const at = int(0, digits.length - 1);
  let d: string;
  do d = String(int(at === 0 ? 1 : 0, 9));
  while (d === digits[at]);
  digits[at] = d;
  return Number(digits.join(''));
}

/** A wrong expression a person might write: an operator swapped (+ for -, + for *), or one digit miscopied. */
function wrongExpression(q: Question): string {
  const p = q.problem;
  const ops = OPS[p.kind];
  if (next() < 0.5) {
    const swap = (op: string) => (op === '+' ? '-' : '+');
    const i = ops[1] !== undefined && next() < 0.5 ? 1 : 0;
    const changed: [string, string?] = i === 0 ? [swap(ops[0]), ops[1]] : [ops[0], swap(ops[1]!)];
    const e = expression(p, changed);
    if (evaluate(e) > 0) return e;
  }
  const slip = { ...p };
  if (next() < 0.5) slip.a = miscopy(p.a);
  else slip.b = miscopy(p.b);
  return expression(slip);
}

const here = dirname(fileURLToPath(import.meta.url));
const config = parseRunConfig(readFileSync(join(here, 'run.yaml'), 'utf8'), 'run.yaml');
const registry = await buildToolRegistry(config.tools, { baseDir: here });
const tools = registry.schemas();

function demo(q: Question): { messages: ChatMessage[]; tools: typeof tools } {
  const kind = next();
  const user: ChatMessage = { role: 'user', content: q.text };
  if (kind >= DEMONSTRATION_MIX.correct + DEMONSTRATION_MIX.wrongExpression) {
    // From memory: a guess near the answer, and wrong.
    const guess = q.answer + (next() < 0.5 ? -1 : 1) * int(1, 90);
    return { messages: [user, { role: 'assistant', content: `\\boxed{${guess}}` }], tools };
  }
  const expr = kind >= DEMONSTRATION_MIX.correct ? wrongExpression(q) : q.expr;
  const result = evaluate(expr);
  return {
    messages: [
      user,
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: { expression: expr } } }],
      },
      { role: 'tool', name: 'calculator', content: String(result) },
      { role: 'assistant', content: `\\boxed{${result}}` },
    ],
    tools,
  };
}

const out = process.argv[2] ?? join(here, 'data');
mkdirSync(out, { recursive: true });
writeDataset(
  join(out, 'train.parquet'),
  Array.from({ length: 512 }, (_, i) => row(question('train'), i, 'train')),
);
writeDataset(
  join(out, 'val.parquet'),
  // the six kinds in turn, so that each is a sixth of the score
  Array.from({ length: 64 }, (_, i) => row(question('val', KINDS[i % KINDS.length]), i, 'val')),
);
writeParquetFile(
  join(out, 'sft.parquet'),
  Array.from({ length: 1000 }, () => {
    const d = demo(question('train'));
    return { messages: JSON.stringify(d.messages), tools: JSON.stringify(d.tools) };
  }),
);
await registry.close();
console.log(`wrote ${out}/{train.parquet,val.parquet,sft.parquet}`);
