// Writes the SmolLM2 example's data (deterministic): word problems with one or two operations on multi-digit
// numbers, which SmolLM2-135M-Instruct gets wrong without a calculator ("347 + 281 = 717"), as train/val Parquet
// datasets, and mixed-quality SFT demonstrations (messages and tools as JSON strings) for the warm start.
//
// The model has to turn the words into the expression (`gave away` is a minus, `each of 37 crates holds 48` a
// product) and copy four-digit numbers into the call. Validation asks in phrasings that training never uses
// (phrasings.ts's VAL_TEMPLATES), with other names and objects, so its accuracy measures the skill, not the sentences.
//
// The demonstrations teach the call format and reading the result, but not reliably when and how to call: like
// demonstrations gathered from people, some answer from memory without the tool (and are wrong) and some write
// the wrong expression (an operator swapped, a digit miscopied) and then faithfully box the wrong result. The
// RL stage's outcome reward (the `toolcall` reward pays a call only when its result reaches the answer) is what
// teaches the model to call every time and to write the right expression.
// Run: npx tsx examples/smollm2/make-data.ts [OUT_DIR] [--oracle] [--restate] [--wide]
//   [--verbs | --many-verbs | --pairs]
// (--oracle: a diagnostic train.parquet, below; --restate: demonstrations that name each number's operation before
// the call, cues.ts; --wide: training questions and demonstrations in 76 phrasings instead of 40, phrasings.ts's
// WIDE_TEMPLATES; --verbs: training questions, half of the sums and differences in the verb bank's frames,
// verbs.ts; --many-verbs: the same with the wide verb bank, 86 verbs of each sign; --pairs: training questions in
// pairs, a verb-bank question beside its mirror, for data.shuffle=false)
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseRunConfig } from '#shared/config/resolve';
import { writeDataset } from '#shared/data/dataset';
import { writeParquetFile } from '#shared/data/parquet';
import { samplingStream } from '#shared/policy/rng';
import type { ChatMessage } from '#shared/schemas/chat';
import { buildToolRegistry } from '#shared/tools/registry';
import { type Kind, restatement, TRAIN_CUES, WIDE_CUES } from './cues.ts';
import {
  DEV_TEMPLATES,
  NAMES,
  type Problem,
  type Template,
  THINGS,
  TRAIN_TEMPLATES,
  VAL_TEMPLATES,
  WIDE_TEMPLATES,
} from './phrasings.ts';
import { GAIN_VERBS, LOSS_VERBS, MORE_GAIN_VERBS, MORE_LOSS_VERBS, VERB_FRAMES } from './verbs.ts';

/** Shares of the demonstrations: a correct call, a call with the wrong expression, no call at all. */
export const DEMONSTRATION_MIX = { correct: 0.8, wrongExpression: 0, noCall: 0.2 } as const;

// One stream for the training questions, the one-phrasing validation set and the demonstrations (in that order, so
// each file is what it was when it was first written); val.parquet draws from its own (`withStream`).
let rng = samplingStream(20251129, 0, 0);
const next = () => rng.next();
function withStream<T>(stream: typeof rng, make: () => T): T {
  const saved = rng;
  rng = stream;
  try {
    return make();
  } finally {
    rng = saved;
  }
}
const int = (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo + 1));
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;

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

const KINDS: Problem['kind'][] = ['add', 'sub', 'mul', 'sub-add', 'add-sub', 'mul-add'];

interface Question {
  text: string;
  /** The training phrasing's cues (cues.ts) for the second and third numbers; absent for held-out phrasings. */
  cues?: [string, string?];
  expr: string;
  answer: number;
  problem: Problem;
}

// `--oracle`: train.parquet also asks the held-out phrasings (with training names, things and numbers), an upper
// bound for diagnosis, never a result: what the recipe reaches when validation's sentences are not new to it.
const args = process.argv.slice(2);
const oracle = args.includes('--oracle');
const restate = args.includes('--restate');
const wide = args.includes('--wide');
const verbs = args.includes('--verbs');
const manyVerbs = args.includes('--many-verbs');
const pairs = args.includes('--pairs');
// TRAIN_CUES is read by the template's index: a phrasing added or removed without its cues would misname numbers.
for (const kind of Object.keys(TRAIN_TEMPLATES) as Kind[])
  for (const [cues, templates] of [
    [TRAIN_CUES, TRAIN_TEMPLATES],
    [WIDE_CUES, WIDE_TEMPLATES],
  ] as const)
    if (cues[kind].length !== templates[kind].length)
      throw new Error(
        `cues.ts: ${kind} has ${cues[kind].length} cues for ${templates[kind].length} phrasings`,
      );
let oracleTraining = false;
/** Training questions also in WIDE_TEMPLATES (`--wide`). */
let wideTraining = false;

/** Training questions of a sign kind half the time in the verb bank's frames (`--verbs`, `--many-verbs`). */
let verbTraining = false;
type SignVerbs = Partial<Record<Problem['kind'], [readonly string[], (readonly string[])?]>>;
const bankOf = (gain: readonly string[], loss: readonly string[]): SignVerbs => ({
  add: [gain],
  sub: [loss],
  'sub-add': [loss, gain],
  'add-sub': [gain, loss],
});
let SIGN_VERBS = bankOf(GAIN_VERBS, LOSS_VERBS);

/** The kind whose expression has the other sign(s): `a + b` for `a - b`, `a + b - c` for `a - b + c`. */
const MIRROR: Partial<Record<Problem['kind'], Problem['kind']>> = {
  add: 'sub',
  sub: 'add',
  'sub-add': 'add-sub',
  'add-sub': 'sub-add',
};

/**
 * A question of a sign kind in a verb-bank frame and its mirror: the same frame, name, things and numbers with the
 * other sign(s): a two-operation question's two verbs swap places, a one-operation question takes a verb of the other
 * list. Only the verbs tell the two apart.
 */
function mirroredPair(): [Question, Question] {
  const kind = pick(Object.keys(MIRROR) as Problem['kind'][]);
  const problem = draw(kind);
  const mirror: Problem = { ...problem, kind: MIRROR[kind]! };
  const two = problem.c !== undefined;
  const frame = pick(two ? VERB_FRAMES.two : VERB_FRAMES.one);
  const [name, things] = [pick(NAMES.train), pick(THINGS.train)];
  const [first, second] = SIGN_VERBS[kind]!;
  const v: [string, string?] = [pick(first), second && pick(second)];
  const w: [string, string?] = two ? [v[1]!, v[0]] : [pick(SIGN_VERBS[mirror.kind]![0])];
  return [framed(problem, frame(problem, name, things, v)), framed(mirror, frame(mirror, name, things, w))];
}

/** A question of `problem` asked in `text`, with its expression and answer. */
function framed(problem: Problem, text: string): Question {
  const expr = expression(problem);
  return { text, expr, answer: evaluate(expr), problem };
}

/** A question of a random kind: in a training phrasing, or in the first held-out phrasing of its kind. */
function question(split: 'train' | 'val'): Question {
  const problem = draw(pick(KINDS));
  const bank = SIGN_VERBS[problem.kind];
  if (split === 'train' && verbTraining && bank && next() < 0.5) {
    const [first, second] = bank;
    const frame = pick(second ? VERB_FRAMES.two : VERB_FRAMES.one);
    return framed(
      problem,
      frame(problem, pick(NAMES.train), pick(THINGS.train), [pick(first), second && pick(second)]),
    );
  }
  const extra = wideTraining
    ? WIDE_TEMPLATES[problem.kind]
    : oracleTraining
      ? VAL_TEMPLATES[problem.kind]
      : [];
  const templates =
    split === 'train'
      ? [...TRAIN_TEMPLATES[problem.kind], ...extra]
      : VAL_TEMPLATES[problem.kind].slice(0, 1);
  const at = Math.floor(next() * templates.length);
  const text = templates[at]!(problem, pick(NAMES[split]), pick(THINGS[split]));
  const trainCues = wideTraining
    ? [...TRAIN_CUES[problem.kind], ...WIDE_CUES[problem.kind]]
    : TRAIN_CUES[problem.kind];
  const cues = split === 'train' ? trainCues[at] : undefined;
  return { ...framed(problem, text), ...(cues ? { cues } : {}) };
}

/**
 * Held-out question `i` of val.parquet (VAL_TEMPLATES) or dev.parquet (DEV_TEMPLATES): kind i mod 6 in held-out
 * phrasing floor(i / 6) mod 3, from the split's own stream (so either file is what it is whatever else is written).
 */
const heldOutSplits = {
  val: { templates: VAL_TEMPLATES, stream: samplingStream(20251129, 1, 0) },
  dev: { templates: DEV_TEMPLATES, stream: samplingStream(20251129, 5, 0) },
};
function heldOut(i: number, split: keyof typeof heldOutSplits = 'val'): Question {
  const kind = KINDS[i % KINDS.length]!;
  const { stream } = heldOutSplits[split];
  const templates: Template[] = heldOutSplits[split].templates[kind];
  const [problem, name, things] = withStream(
    stream,
    () => [draw(kind), pick(NAMES[split]), pick(THINGS[split])] as const,
  );
  return framed(problem, templates[Math.floor(i / KINDS.length) % templates.length]!(problem, name, things));
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
  const content = restate && q.cues ? restatement(q.cues, expr) : '';
  return {
    messages: [
      user,
      {
        role: 'assistant',
        content,
        tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: { expression: expr } } }],
      },
      { role: 'tool', name: 'calculator', content: String(result) },
      { role: 'assistant', content: `\\boxed{${result}}` },
    ],
    tools,
  };
}

const out = args.find((a) => !a.startsWith('--')) ?? join(here, 'data');
mkdirSync(out, { recursive: true });
/** The 512 training questions, drawn from the current stream. */
const trainingRows = () => Array.from({ length: 512 }, (_, i) => row(question('train'), i, 'train'));
oracleTraining = oracle;
writeDataset(join(out, 'train.parquet'), trainingRows());
oracleTraining = false;
writeDataset(
  join(out, 'val-one-phrasing.parquet'),
  Array.from({ length: 64 }, (_, i) => row(question('val'), i, 'val')),
);
writeDataset(
  join(out, 'val.parquet'),
  Array.from({ length: 64 }, (_, i) => row(heldOut(i), i, 'val')),
);
writeDataset(
  join(out, 'dev.parquet'),
  Array.from({ length: 64 }, (_, i) => row(heldOut(i, 'dev'), i, 'dev')),
);
const demonstrations = Array.from({ length: 1000 }, () => demo(question('train')));
const demoRow = ({ messages, tools }: ReturnType<typeof demo>) => ({
  messages: JSON.stringify(messages),
  tools: JSON.stringify(tools),
});
writeParquetFile(join(out, 'sft.parquet'), demonstrations.map(demoRow));
// Less those answering from memory (every call in them is right): for `trainer.sft.ptx_data` (README.md).
writeParquetFile(
  join(out, 'ptx.parquet'),
  demonstrations.filter((d) => d.messages.some((m) => m.tool_calls !== undefined)).map(demoRow),
);
// `--wide`: train.parquet and sft.parquet ask in TRAIN_TEMPLATES and WIDE_TEMPLATES, from a stream of their own
// (the files without the flag stay what they were; val.parquet is the same either way).
if (wide) {
  rng = samplingStream(20251129, 2, 0);
  wideTraining = true;
  writeDataset(join(out, 'train.parquet'), trainingRows());
  writeParquetFile(
    join(out, 'sft.parquet'),
    Array.from({ length: 1000 }, () => demoRow(demo(question('train')))),
  );
  wideTraining = false;
}
// `--verbs`: train.parquet (only) asks half of its sums and differences in the verb bank's frames, from a stream of
// its own; sft.parquet stays the shipped one, so a run's warm start and v0 are the recipe's.
if (verbs) {
  rng = samplingStream(20251129, 3, 0);
  verbTraining = true;
  writeDataset(join(out, 'train.parquet'), trainingRows());
  verbTraining = false;
}
// `--many-verbs`: as `--verbs`, with the wide verb bank (the bank and MORE_GAIN_VERBS, MORE_LOSS_VERBS), from a
// stream of its own.
if (manyVerbs) {
  rng = samplingStream(20251129, 6, 0);
  SIGN_VERBS = bankOf([...GAIN_VERBS, ...MORE_GAIN_VERBS], [...LOSS_VERBS, ...MORE_LOSS_VERBS]);
  verbTraining = true;
  writeDataset(join(out, 'train.parquet'), trainingRows());
  verbTraining = false;
  SIGN_VERBS = bankOf(GAIN_VERBS, LOSS_VERBS);
}
// `--pairs`: train.parquet (only) as 256 pairs of rows in a seeded order, for `data.shuffle=false` so that a step of
// 16 questions holds 8 pairs whole: 40% of the pairs a verb-bank question and its mirror (mirroredPair), the rest two
// questions in the training phrasings. sft.parquet stays the shipped one.
if (pairs) {
  rng = samplingStream(20251129, 4, 0);
  const units = Array.from({ length: 256 }, () =>
    next() < 0.4 ? mirroredPair() : [question('train'), question('train')],
  );
  writeDataset(
    join(out, 'train.parquet'),
    units.flat().map((q, i) => row(q, i, 'train')),
  );
}
await registry.close();
console.log(
  `wrote ${out}/{train.parquet,val.parquet,dev.parquet,val-one-phrasing.parquet,sft.parquet,ptx.parquet}`,
);
