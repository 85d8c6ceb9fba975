// `toolcall`: five weighted parts of a good tool-using episode (weights 0.3/0.2/0.2/0.2/0.1 by default).
// A = call attempts (well-formed + malformed), C = well-formed calls, need = whether the task needs a tool
// (ground truth `need_tool`, else whether it lists `tools`, else the config's `need_tool`).
//   correctness  (0.3) calls that named an allowed tool and did not fail / A; with A = 0: 1 if !need else 0.
//                      Allowed: the ground truth's `tools` if given, else the tools offered, else any name.
//   necessity    (0.2) need and C > 0: 1 - repeated calls / C (a call identical in name and arguments to an
//                      earlier one is not necessary); !need and C = 0: 1; otherwise 0.
//   result_use   (0.2) 1 when the answer is grounded in a successful result: the answer (text) occurs in a
//                      successful output, or a number in the answer equals one in an output; with no call
//                      made and none needed: 1; otherwise 0.
//   final_answer (0.2) the answer equals a golden answer (rationals, then normalised text); with no ground
//                      truth answer: 1 when the episode ended with an answer.
//   coherence    (0.1) mean of three checks: finished with eos, no empty turn, no malformed call.
// The answer is read from the last turn (`answer`: auto = answer tag, boxed, final-answer line, content).
import Fraction from 'fraction.js';
import { z } from 'zod';
import { AnswerFormatSchema, extractAnswer, goldAnswers } from '../answer.ts';
import type { RewardInput, ScoredCall } from '../input.ts';
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
  })
  .strict();

/** What the ground truth may say beyond the answer: `{"answer": …, "need_tool": bool, "tools": [names]}`. */
function expectations(groundTruth: unknown, needDefault: boolean): { need: boolean; tools: string[] | null } {
  const gt =
    typeof groundTruth === 'object' && groundTruth !== null && !Array.isArray(groundTruth)
      ? (groundTruth as Record<string, unknown>)
      : {};
  const tools = Array.isArray(gt['tools'])
    ? gt['tools'].filter((t): t is string => typeof t === 'string')
    : null;
  const need =
    typeof gt['need_tool'] === 'boolean' ? gt['need_tool'] : tools ? tools.length > 0 : needDefault;
  return { need, tools };
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

function resultUse(input: RewardInput, answer: string, need: boolean): number {
  const calls = allCalls(input);
  if (calls.length === 0) return need ? 0 : 1;
  const outputs = calls.filter(succeeded).map((c) => c.result!.output);
  const folded = foldText(answer);
  if (folded !== '' && outputs.some((o) => foldText(o).includes(folded))) return 1;
  const answerNumbers = numbersIn(answer);
  if (answerNumbers.length === 0) return 0;
  return outputs.some((o) => numbersIn(o).some((n) => answerNumbers.some((a) => a.equals(n)))) ? 1 : 0;
}

export const toolcallReward = defineReward({
  name: 'toolcall',
  // the golden-answer match; `correctness` is about the calls, not the task
  accuracy: 'final_answer',
  description: 'correctness 0.3, necessity 0.2, use of the result 0.2, final answer 0.2, coherence 0.1',
  config: ToolcallConfigSchema,
  create: (config) => (input) => {
    const { need, tools: expectedTools } = expectations(input.groundTruth, config.need_tool);
    const allowed = expectedTools ?? input.tools;
    const calls = allCalls(input);
    const attempts = attemptCount(input);

    const good = calls.filter((c) => (allowed === null || allowed.includes(c.name)) && !failed(c)).length;
    const correctness = attempts === 0 ? (need ? 0 : 1) : good / attempts;

    let necessity = 0;
    if (need && calls.length > 0) necessity = new Set(calls.map(callKey)).size / calls.length;
    else if (!need && calls.length === 0) necessity = 1;

    const content = finalContent(input);
    const answer = extractAnswer(content, config.answer) ?? '';
    const use = resultUse(input, answer, need);

    const golds = goldAnswers(input.groundTruth);
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
