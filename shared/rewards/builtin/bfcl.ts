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
import { toolsAtTurn } from '#shared/episode/user-turns';
import { sharedBfclEnv } from '#shared/tools/bfcl/client';
import { bfclEntryOf, groundTruthOf } from '#shared/tools/bfcl/entry';
import { ensureBfclEnv } from '#shared/tools/bfcl/env';
import { callsByUserTurn } from '#shared/tools/bfcl/trajectory';
import { defineReward } from '../types.ts';

const BfclConfigSchema = z
  .object({
    score: z.enum(['progress', 'success']).default('progress'),
    /** A Python with bfcl-eval installed; default `TOOLRL_BFCL_PYTHON` or the environment `toolrl bfcl setup` makes. */
    python: z.string().optional(),
  })
  .strict();

export const bfclReward = defineReward({
  name: 'bfcl',
  description:
    "BFCL's multi-turn checker per user turn: progress = turns passed / turns; success = all passed",
  config: BfclConfigSchema,
  create: (config) => {
    let ready: Promise<unknown> | null = null;
    return async (input) => {
      ready ??= ensureBfclEnv({ python: config.python });
      await ready;
      const entry = bfclEntryOf(input.extraInfo);
      const groundTruth = groundTruthOf(input.groundTruth);
      const tools = toolsAtTurn({ extra_info: input.extraInfo }, Number.POSITIVE_INFINITY);
      // Without the row's tool list every call is offered to the checker (it skips names it does not know).
      const functions = new Set(
        tools.length > 0
          ? tools.map((t) => t.function.name)
          : input.turns.flatMap((t) => t.calls.map((c) => c.name)),
      );
      const modelTurns = callsByUserTurn(input.turns, functions);
      const result = await sharedBfclEnv({ python: config.python }).score(
        entry,
        groundTruth,
        modelTurns.slice(0, groundTruth.length),
        input.finishReason !== 'eos',
      );
      const passed = result.turns.filter((t) => t.passed).length;
      const progress = passed / result.turns.length;
      const success = result.success.valid ? 1 : 0;
      return {
        score: config.score === 'success' ? success : progress,
        components: { progress, success, turns_passed: passed, turns: result.turns.length },
      };
    };
  },
});
