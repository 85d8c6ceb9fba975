// `bfcl`: BFCL's multi-turn checker on the calls that reached the environment, per user turn.
//   turn t passes   when, after the model's calls of turns 0..t replayed from initial_config, its instances equal
//                   the ground truth's (BFCL's state check) and every ground-truth result of turn t is among the
//                   model's results so far (BFCL's response check); a turn with an empty ground truth (the model
//                   should ask or decline) passes when reached, as BFCL leaves it unchecked; an unreached turn fails
//   progress        turns passed / turns  (EnvTuning's fine-grained progress reward)
//   success         1 when BFCL's multi_turn_checker accepts the whole trajectory and the episode ended normally
//                   (`eos` after the last user turn; BFCL fails force-terminated entries), else 0
//   score           progress (default) or success (`score: success`)
import { z } from 'zod';
import { defineReward } from '#shared/rewards/types';
import { checkTrajectory } from './check.ts';
import { sharedBfclEnv } from './client.ts';
import { ensureBfclEnv } from './env.ts';

const BfclConfigSchema = z
  .object({
    score: z.enum(['progress', 'success']).default('progress'),
    /** A Python with bfcl-eval installed; default `TOOLRL_BFCL_PYTHON` or the environment `toolrl bfcl setup` makes. */
    python: z.string().optional(),
  })
  .strict();

export const bfclReward = defineReward({
  name: 'bfcl',
  // BFCL's leaderboard accuracy: every turn of the entry passes
  accuracy: 'success',
  description:
    "BFCL's multi-turn checker per user turn: progress = turns passed / turns; success = all passed",
  config: BfclConfigSchema,
  create: (config) => {
    let ready: Promise<unknown> | null = null;
    return async (input) => {
      ready ??= ensureBfclEnv({ python: config.python }).catch((err) => {
        ready = null; // the next trajectory tries again
        throw err;
      });
      await ready;
      const check = await checkTrajectory(sharedBfclEnv({ python: config.python }), input);
      return {
        score: config.score === 'success' ? check.success : check.progress,
        components: {
          progress: check.progress,
          success: check.success,
          turns_passed: check.turnsPassed,
          turns_checked: check.turnsChecked,
        },
      };
    };
  },
});
