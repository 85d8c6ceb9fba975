// `exact_match`: the answer equals one of the golden answers after SQuAD / Search-R1 normalisation (case,
// punctuation, articles, whitespace), as Search-R1 scores NQ and HotpotQA. With `substring: true`, a golden
// answer contained in the prediction counts (the "cover EM" variant).
//   score = 1 on a match, else `format_score` when an answer was found (Search-R1's partial credit), else 0
import { z } from 'zod';
import { AnswerFormatSchema, extractAnswer, goldAnswers } from '../answer.ts';
import { normaliseText } from '../text.ts';
import { finalContent } from '../trajectory-stats.ts';
import { defineReward } from '../types.ts';

const ExactMatchConfigSchema = z
  .object({
    /** Where the answer is read from the last turn (`auto`: answer tag, boxed, final-answer line, content). */
    answer: AnswerFormatSchema.default('auto'),
    substring: z.boolean().default(false),
    format_score: z.number().default(0),
  })
  .strict();

export const exactMatchReward = defineReward({
  name: 'exact_match',
  accuracy: 'exact_match',
  description: 'normalised exact match of the answer against a list of golden answers (Search-R1)',
  config: ExactMatchConfigSchema,
  create: (config) => (input) => {
    const golds = goldAnswers(input.groundTruth).map(normaliseText);
    if (golds.length === 0)
      throw new Error('exact_match needs a ground truth (a string, a list, or {"target": [...]})');
    const answer = extractAnswer(finalContent(input), config.answer);
    const predicted = answer === null ? null : normaliseText(answer);
    const match =
      predicted !== null &&
      golds.some((g) => (config.substring ? g !== '' && predicted.includes(g) : predicted === g));
    const score = match ? 1 : answer !== null ? config.format_score : 0;
    return { score, components: { exact_match: match ? 1 : 0, answer_found: answer !== null ? 1 : 0 } };
  },
});
