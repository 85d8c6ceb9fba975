// `toolbench`: a StableToolBench episode that calls APIs and ends by calling `Finish` with an answer.
// Each part is a value in [0, 1]; the score is their weighted sum with the configured weights:
//   format         valid calls / call attempts (0 when no call was attempted: the answer goes through Finish)
//   function_call  API calls (not Finish) that succeeded / API calls (0 when none)
//   finish         1 when the last Finish call succeeded with return_type "give_answer" and a non-empty
//                  final_answer (give_up_and_restart scores 0)
//   error_rate     (malformed calls + calls that failed or were not run) / call attempts (0 when none);
//                  weighted by error_penalty (negative)
//   finish_bonus   1 when finish = 1, error_rate = 0 and, if the row has a ground truth, the final answer
//                  contains a golden answer (normalised text)
//   score = format*w_format + function_call*w_function_call + finish*w_finish + error_rate*error_penalty
//           + finish_bonus*w_finish_bonus        (defaults 0.1, 0.2, 0.3, -0.5, 0.5: range [-0.5, 1.1])
// A call the API cache could not answer (tool error `not_cached`) is the environment's gap, not the model's: it
// counts in neither function_call nor error_rate, and `not_cached` (such calls / API calls) logs how often.
// The seed's names for the weights (format_reward_weight, function_call_reward_weight, finish_reward_weight) are
// translated to these when the run config is read (shared/config).
import { z } from 'zod';
import { goldAnswers } from '../answer.ts';
import type { ScoredCall } from '../input.ts';
import { normaliseText } from '../text.ts';
import { allCalls, attemptCount, failed, parseErrorCount, succeeded } from '../trajectory-stats.ts';
import { defineReward } from '../types.ts';
import { weightedSum } from '../weighted.ts';

const ToolbenchConfigSchema = z
  .object({
    format: z.number().default(0.1),
    function_call: z.number().default(0.2),
    finish: z.number().default(0.3),
    error_penalty: z.number().default(-0.5),
    finish_bonus: z.number().default(0.5),
    /** The name of ToolBench's finishing function. */
    finish_tool: z.string().default('Finish'),
  })
  .strict();

function finishAnswer(call: ScoredCall | undefined): string | null {
  if (!call || call.result?.ok === false) return null;
  const args = call.arguments as Record<string, unknown> | null;
  const answer = args?.['final_answer'];
  return args?.['return_type'] === 'give_answer' && typeof answer === 'string' && answer.trim() !== ''
    ? answer
    : null;
}

export const toolbenchReward = defineReward({
  name: 'toolbench',
  // ToolBench's pass criterion without its LLM judge: the episode ended with Finish(give_answer, an answer)
  accuracy: 'finish',
  description:
    'StableToolBench: format, function calls, Finish with an answer, error penalty, clean-finish bonus',
  config: ToolbenchConfigSchema,
  create: (config) => (input) => {
    const calls = allCalls(input);
    const attempts = attemptCount(input);
    const notCached = (c: ScoredCall) => c.result?.error?.type === 'not_cached';
    const allApiCalls = calls.filter((c) => c.name !== config.finish_tool);
    const apiCalls = allApiCalls.filter((c) => !notCached(c));
    const format = attempts === 0 ? 0 : calls.length / attempts;
    const functionCall = apiCalls.length === 0 ? 0 : apiCalls.filter(succeeded).length / apiCalls.length;
    const answer = finishAnswer(calls.filter((c) => c.name === config.finish_tool).at(-1));
    const finish = answer !== null ? 1 : 0;
    const judged = attempts - (allApiCalls.length - apiCalls.length);
    const errors = parseErrorCount(input) + calls.filter((c) => failed(c) && !notCached(c)).length;
    const errorRate = judged === 0 ? 0 : errors / judged;
    const uncached =
      allApiCalls.length === 0 ? 0 : (allApiCalls.length - apiCalls.length) / allApiCalls.length;
    const golds = goldAnswers(input.groundTruth)
      .map(normaliseText)
      .filter((g) => g !== '');
    const answerMatches =
      golds.length === 0 || (answer !== null && golds.some((g) => normaliseText(answer).includes(g)));
    const bonus = finish === 1 && errorRate === 0 && answerMatches ? 1 : 0;
    return {
      score: weightedSum([
        [config.format, format],
        [config.function_call, functionCall],
        [config.finish, finish],
        [config.error_penalty, errorRate],
        [config.finish_bonus, bonus],
      ]),
      components: {
        format,
        function_call: functionCall,
        finish,
        error_rate: errorRate,
        finish_bonus: bonus,
        not_cached: uncached,
      },
    };
  },
});
