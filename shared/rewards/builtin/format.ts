// `format`: the episode's tool calls were well-formed and it ended with an answer.
//   well_formed  = valid calls / (valid calls + malformed calls), 1 when no call was attempted
//   final_answer = 1 when the episode ended with an answer (eos, last turn without call attempts, non-empty
//                  content) in the configured form (`answer`: any text, boxed, answer tag, final-answer line)
//   score        = (well_formed + final_answer) / 2
import { z } from 'zod';
import { extractAnswer } from '../answer.ts';
import { allCalls, attemptCount, endedWithAnswer, finalContent } from '../trajectory-stats.ts';
import { defineReward } from '../types.ts';

const FormatConfigSchema = z
  .object({
    /** The form the final answer must take: `any` non-empty text, or `boxed`, `answer_tag`, `final_answer`. */
    answer: z.enum(['any', 'boxed', 'answer_tag', 'final_answer']).default('any'),
  })
  .strict();

export const formatReward = defineReward({
  name: 'format',
  description: 'well-formed tool calls and a final answer: (well_formed + final_answer) / 2',
  config: FormatConfigSchema,
  create: (config) => (input) => {
    const attempts = attemptCount(input);
    const wellFormed = attempts === 0 ? 1 : allCalls(input).length / attempts;
    const answered =
      endedWithAnswer(input) &&
      (config.answer === 'any' || extractAnswer(finalContent(input), config.answer) !== null);
    const finalAnswer = answered ? 1 : 0;
    return {
      score: (wellFormed + finalAnswer) / 2,
      components: { well_formed: wellFormed, final_answer: finalAnswer },
    };
  },
});
