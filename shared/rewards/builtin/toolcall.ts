// `toolcall`: five weighted parts of a good tool-using episode (weights 0.3/0.2/0.2/0.2/0.1 by default), after
// ToolRL's reward, whose correctness part asks whether a call's format *and* parameters are right.
// A = call attempts (well-formed + malformed), C = well-formed calls, need = whether the task needs a tool
// (ground truth `need_tool`, else whether it lists `tools`, else the config's `need_tool`).
//
// Which calls count: a call *serves* the task when it names an allowed tool, succeeded, and (where the ground
// truth says what the calls should do) does that. Allowed: the ground truth's `tools` if given, else the tools
// offered, else any name. What a call should do, in order of precedence (`check_calls: auto`):
//   1. ground truth `calls` (or `tool_calls`): [{name, arguments}]; a call serves when it equals one of them not
//      matched yet (same name, arguments equal after trimming and collapsing whitespace in strings, numbers
//      compared as numbers, key order ignored);
//   2. a golden answer: a call serves when its result reaches the answer (the answer's text is in its output, or a
//      number in its output equals the answer), or when its result feeds a later call that serves (a number or
//      the text of its output appears in that call's arguments): a lookup whose result goes into the calculator
//      that computes the answer serves; a well-formed call with the wrong operands does not;
//   3. neither: every allowed call that succeeded serves (also with `check_calls: none`).
// So a "hollow" call (right format, arguments that do not serve the task) earns no correctness, necessity or
// result_use credit: it scores like answering without a call.
//
//   correctness  (0.3) serving calls / A; with A = 0: 1 if !need else 0.
//   necessity    (0.2) need and C > 0: distinct serving calls / C (a call identical in name and arguments to an
//                      earlier one is not necessary); !need and C = 0: 1; otherwise 0.
//   result_use   (0.2) 1 when the answer is grounded in the result of a serving call: the answer (text) occurs in
//                      its output, or a number in the answer equals one in it; with no call made and none
//                      needed: 1; otherwise 0.
//   final_answer (0.2) the answer equals a golden answer (rationals, then normalised text); with no ground
//                      truth answer: 1 when the episode ended with an answer.
//   coherence    (0.1) mean of three checks: finished with eos, no empty turn, no malformed call.
// The answer is read from the last turn (`answer`: auto = answer tag, boxed, final-answer line, content).
import Fraction from 'fraction.js';
import { z } from 'zod';
import { AnswerFormatSchema, extractAnswer, goldAnswers } from '../answer.ts';
import type { ScoredCall } from '../input.ts';
import { mathAnswersEqual } from '../math-answer.ts';
import { foldText } from '../text.ts';
import {
  allCalls,
  attemptCount,
  endedWithAnswer,
  failed,
  finalContent,
  parseErrorCount,
  succeeded,
} from '../trajectory-stats.ts';
import { defineReward } from '../types.ts';
import { weightedSum } from '../weighted.ts';

const WeightsSchema = z
  .object({
    correctness: z.number().default(0.3),
    necessity: z.number().default(0.2),
    result_use: z.number().default(0.2),
    final_answer: z.number().default(0.2),
    coherence: z.number().default(0.1),
  })
  .strict();

const ToolcallConfigSchema = z
  .object({
    weights: WeightsSchema.default(WeightsSchema.parse({})),
    /** Whether tasks need a tool when the ground truth does not say. */
    need_tool: z.boolean().default(true),
    answer: AnswerFormatSchema.default('auto'),
    rel_tol: z.number().nonnegative().default(1e-9),
    /**
     * auto: a call earns credit only when it serves the task as the ground truth defines it (expected calls, or a
     * result that reaches or feeds the answer); none: any allowed call that succeeded earns it (format only).
     */
    check_calls: z.enum(['auto', 'none']).default('auto'),
  })
  .strict();

const ExpectedCallSchema = z.looseObject({ name: z.string(), arguments: z.unknown().optional() });

interface Expectations {
  need: boolean;
  tools: string[] | null;
  /** The calls the task wants (ground truth `calls` / `tool_calls`); null when it does not say. */
  calls: { name: string; arguments: unknown }[] | null;
}

/** What the ground truth may say beyond the answer: `{answer, need_tool, tools: [names], calls: [{name, arguments}]}`. */
function expectations(groundTruth: unknown, needDefault: boolean): Expectations {
  const gt =
    typeof groundTruth === 'object' && groundTruth !== null && !Array.isArray(groundTruth)
      ? (groundTruth as Record<string, unknown>)
      : {};
  const tools = Array.isArray(gt['tools'])
    ? gt['tools'].filter((t): t is string => typeof t === 'string')
    : null;
  const rawCalls = gt['calls'] ?? gt['tool_calls'];
  const parsedCalls = z.array(ExpectedCallSchema).safeParse(rawCalls);
  const calls = parsedCalls.success
    ? parsedCalls.data.map((c) => ({ name: c.name, arguments: parseArguments(c.arguments ?? {}) }))
    : null;
  const need =
    typeof gt['need_tool'] === 'boolean'
      ? gt['need_tool']
      : tools
        ? tools.length > 0
        : calls
          ? calls.length > 0
          : needDefault;
  return { need, tools, calls };
}

/** Arguments written as a JSON string (OpenAI's wire form) compare as the object they encode. */
function parseArguments(args: unknown): unknown {
  if (typeof args !== 'string') return args;
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
}

/** Deep equality of argument values: strings trimmed with whitespace runs collapsed, numbers as numbers. */
function sameValue(a: unknown, b: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  const num = (v: unknown) =>
    typeof v === 'number' ? v : typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v) ? Number(v) : null;
  const na = num(a);
  const nb = num(b);
  if (na !== null && nb !== null) return na === nb;
  if (typeof a === 'string' && typeof b === 'string')
    return a.trim().replace(/\s+/g, ' ') === b.trim().replace(/\s+/g, ' ');
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((v, i) => sameValue(v, b[i], depth + 1));
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    const ka = Object.keys(a as object).sort();
    const kb = Object.keys(b as object).sort();
    return (
      ka.length === kb.length &&
      ka.every(
        (k, i) =>
          k === kb[i] &&
          sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], depth + 1),
      )
    );
  }
  return a === b;
}

/** Name plus arguments with sorted keys; deeply nested arguments that cannot be serialised count as unique. */
function callKey(call: ScoredCall, i: number): string {
  try {
    const sorted = (_k: string, v: unknown) =>
      typeof v === 'object' && v !== null && !Array.isArray(v)
        ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        : v;
    return `${call.name}\u0000${JSON.stringify(call.arguments, sorted)}`;
  } catch {
    return `${call.name}\u0000#${i}`;
  }
}

const NUMBER = /-?\d+(?:\.\d+)?/g;
/** The numbers written in a text (the first 1000: outputs can be long), as exact rationals. */
function numbersIn(text: string): Fraction[] {
  const out: Fraction[] = [];
  for (const m of text.matchAll(NUMBER)) {
    if (out.length >= 1000) break;
    if (m[0].length <= 64) out.push(new Fraction(m[0]));
  }
  return out;
}

const PLAIN_NUMBER = /^\s*-?\d+(?:\.\d+)?\s*$/;

/**
 * Whether `text` holds `answer`: a number equal to it when the answer is a plain number ("628" is not held by
 * "1628"), else its folded text, or a number equal to one of the answer's numbers.
 */
function holds(text: string, answer: string): boolean {
  const wanted = numbersIn(answer);
  const hasNumber = wanted.length > 0 && numbersIn(text).some((n) => wanted.some((a) => a.equals(n)));
  if (PLAIN_NUMBER.test(answer)) return hasNumber;
  const folded = foldText(answer);
  return (folded !== '' && foldText(text).includes(folded)) || hasNumber;
}

/** The arguments as text, for "does an earlier result appear in them" (bounded: arguments can be huge). */
function argumentsText(call: ScoredCall): string {
  try {
    return (
      typeof call.arguments === 'string' ? call.arguments : (JSON.stringify(call.arguments) ?? '')
    ).slice(0, 100_000);
  } catch {
    return '';
  }
}

/** Whether an earlier call's output is used in a later call's arguments (a number of it, or its whole text). */
function feeds(earlier: ScoredCall, later: ScoredCall): boolean {
  const output = earlier.result?.output ?? '';
  const args = argumentsText(later);
  const outNumbers = numbersIn(output);
  if (outNumbers.length > 0) {
    const argNumbers = numbersIn(args);
    return outNumbers.some((n) => argNumbers.some((a) => a.equals(n)));
  }
  const folded = foldText(output);
  return folded !== '' && folded.length <= 200 && foldText(args).includes(folded);
}

/** Which calls (by index in `calls`) serve the task; see the module comment. */
export function servingCalls(
  calls: readonly ScoredCall[],
  allowed: readonly string[] | null,
  expected: Expectations['calls'],
  golds: readonly string[],
  check: 'auto' | 'none',
): boolean[] {
  const ok = calls.map((c) => (allowed === null || allowed.includes(c.name)) && !failed(c));
  if (check === 'none') return ok;
  if (expected) {
    const unmatched = [...expected];
    return calls.map((c, i) => {
      if (!ok[i]) return false;
      const at = unmatched.findIndex(
        (e) => e.name === c.name && sameValue(parseArguments(c.arguments), e.arguments),
      );
      if (at < 0) return false;
      unmatched.splice(at, 1);
      return true;
    });
  }
  if (golds.length === 0) return ok;
  // A call's result must be known to reach or feed the answer: calls with unknown results earn nothing here.
  const serves = calls.map((c, i) => ok[i]! && succeeded(c) && golds.some((g) => holds(c.result!.output, g)));
  for (let i = calls.length - 1; i >= 0; i--) {
    if (serves[i] || !ok[i] || !succeeded(calls[i]!)) continue;
    for (let j = i + 1; j < calls.length; j++)
      if (serves[j] && feeds(calls[i]!, calls[j]!)) {
        serves[i] = true;
        break;
      }
  }
  return serves;
}

function resultUse(
  calls: readonly ScoredCall[],
  serving: readonly boolean[],
  answer: string,
  need: boolean,
): number {
  if (calls.length === 0) return need ? 0 : 1;
  if (answer.trim() === '') return 0;
  return calls.some((c, i) => serving[i] && succeeded(c) && holds(c.result!.output, answer)) ? 1 : 0;
}

export const toolcallReward = defineReward({
  name: 'toolcall',
  // the golden-answer match; `correctness` is about the calls, not the task
  accuracy: 'final_answer',
  description:
    'correctness 0.3 (calls that serve the task), necessity 0.2, use of the result 0.2, final answer 0.2, coherence 0.1',
  config: ToolcallConfigSchema,
  create: (config) => (input) => {
    const expect = expectations(input.groundTruth, config.need_tool);
    const { need } = expect;
    const allowed = expect.tools ?? input.tools;
    const calls = allCalls(input);
    const attempts = attemptCount(input);
    const golds = goldAnswers(input.groundTruth);
    const serving = servingCalls(calls, allowed, expect.calls, golds, config.check_calls);
    const good = serving.filter(Boolean).length;

    const correctness = attempts === 0 ? (need ? 0 : 1) : good / attempts;

    let necessity = 0;
    if (need && calls.length > 0)
      necessity = new Set(calls.map(callKey).filter((_, i) => serving[i])).size / calls.length;
    else if (!need && calls.length === 0) necessity = 1;

    const content = finalContent(input);
    const answer = extractAnswer(content, config.answer) ?? '';
    const use = resultUse(calls, serving, answer, need);

    const finalAnswer =
      golds.length === 0
        ? endedWithAnswer(input)
          ? 1
          : 0
        : answer !== '' && golds.some((g) => mathAnswersEqual(answer, g, { relTol: config.rel_tol }))
          ? 1
          : 0;

    const checks = [
      input.finishReason === 'eos',
      input.turns.every((t) => t.content.trim() !== '' || t.calls.length + t.parseErrors.length > 0),
      parseErrorCount(input) === 0,
    ];
    const coherence = checks.filter(Boolean).length / checks.length;

    const w = config.weights;
    const parts = { correctness, necessity, result_use: use, final_answer: finalAnswer, coherence };
    const score = weightedSum([
      [w.correctness, correctness],
      [w.necessity, necessity],
      [w.result_use, use],
      [w.final_answer, finalAnswer],
      [w.coherence, coherence],
    ]);
    return { score, components: parts };
  },
});
