// `retool`: ReTool's outcome reward (arXiv:2504.11536): +1 when the final answer equals the ground truth,
// -1 otherwise, read from the last turn's `\boxed{}` by default; minus a penalty per malformed call.
//   correct   = the extracted answer equals a golden answer (as rationals, 0.5 = 1/2, or as normalised text)
//   malformed = calls that did not parse + calls the tool refused as unknown or with invalid arguments
//   penalty   = min(max_malformed_penalty, malformed_penalty * malformed)
//   score     = (correct ? correct_reward : wrong_reward) - penalty
import { z } from 'zod';
import { AnswerFormatSchema, extractAnswer, goldAnswers } from '../answer.ts';
import { mathAnswersEqual } from '../math-answer.ts';
import { allCalls, finalContent, parseErrorCount } from '../trajectory-stats.ts';
import { defineReward } from '../types.ts';

const RetoolConfigSchema = z
  .object({
    correct_reward: z.number().default(1),
    wrong_reward: z.number().default(-1),
    malformed_penalty: z.number().nonnegative().default(0.1),
    max_malformed_penalty: z.number().nonnegative().default(0.5),
    answer: AnswerFormatSchema.default('boxed'),
    /** Relative tolerance for numeric answers (floats printed by code); 0 asks for exact rationals. */
    rel_tol: z.number().nonnegative().default(1e-9),
  })
  .strict();

/** Tool errors that mean the call itself was malformed, not that the tool failed on a good call. */
const MALFORMED_TYPES = new Set(['unknown_tool', 'invalid_arguments', 'parse_error']);

export const retoolReward = defineReward({
  name: 'retool',
  accuracy: 'correct',
  description: 'ReTool: +1/-1 on the boxed final answer, minus a penalty per malformed tool call',
  config: RetoolConfigSchema,
  create: (config) => (input) => {
    const golds = goldAnswers(input.groundTruth);
    if (golds.length === 0) throw new Error('retool needs a ground truth answer');
    const answer = extractAnswer(finalContent(input), config.answer);
    const correct =
      answer !== null && golds.some((g) => mathAnswersEqual(answer, g, { relTol: config.rel_tol }));
    const refused = allCalls(input).filter(
      (c) => c.result?.error && MALFORMED_TYPES.has(c.result.error.type),
    ).length;
    const malformed = parseErrorCount(input) + refused;
    const penalty = Math.min(config.max_malformed_penalty, config.malformed_penalty * malformed);
    return {
      score: (correct ? config.correct_reward : config.wrong_reward) - penalty,
      components: {
        correct: correct ? 1 : 0,
        answer_found: answer !== null ? 1 : 0,
        malformed_calls: malformed,
        penalty,
      },
    };
  },
});
