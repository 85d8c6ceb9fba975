// `format`: the episode's tool calls were well-formed and it ended with an answer.
//   well_formed  = valid calls / (valid calls + malformed calls); with no call attempted: 0 where a call is
//                  expected, 1 where none is
//   final_answer = 1 when the episode ended with an answer (eos, last turn without call attempts, non-empty
//                  content) in the configured form (`answer`: any text, boxed, answer tag, final-answer line)
//   score        = (well_formed + final_answer) / 2, and 0 for an episode that makes no call where one is
//                  expected: EnvTuning's format reward multiplies by is_tool_call, so that its stage 1 does not
//                  pay for doing nothing.
// A call is expected unless the row's ground truth says `need_tool: false` (or lists no `tools`), or the config
// says `need_tool: false` for rows that do not say.
import { z } from 'zod';
import { extractAnswer } from '../answer.ts';
import { callExpected } from '../expectations.ts';
import { allCalls, attemptCount, endedWithAnswer, finalContent } from '../trajectory-stats.ts';
import { defineReward } from '../types.ts';

const FormatConfigSchema = z
  .object({
    /** The form the final answer must take: `any` non-empty text, or `boxed`, `answer_tag`, `final_answer`. */
    answer: z.enum(['any', 'boxed', 'answer_tag', 'final_answer']).default('any'),
    /** Whether rows whose ground truth does not say expect a tool call (false: answering alone scores fully). */
    need_tool: z.boolean().default(true),
  })
  .strict();

export const formatReward = defineReward({
  name: 'format',
  description:
    'well-formed tool calls and a final answer: (well_formed + final_answer) / 2; 0 without a call where one is expected',
  config: FormatConfigSchema,
  create: (config) => (input) => {
    const attempts = attemptCount(input);
    const expected = callExpected(input.groundTruth, config.need_tool);
    const wellFormed = attempts === 0 ? (expected ? 0 : 1) : allCalls(input).length / attempts;
    const answered =
      endedWithAnswer(input) &&
      (config.answer === 'any' || extractAnswer(finalContent(input), config.answer) !== null);
    const finalAnswer = answered ? 1 : 0;
    const noCallWhereExpected = expected && attempts === 0;
    return {
      score: noCallWhereExpected ? 0 : (wellFormed + finalAnswer) / 2,
      components: { well_formed: wellFormed, final_answer: finalAnswer },
    };
  },
});
