// A finished trajectory judged by BFCL's checker: the calls that reached the environment, split by user turn,
// against the row's ground truth. Shared by the `bfcl` reward and `toolrl bfcl eval`, so training and evaluation
// score alike.
import { toolsAtTurn } from '#shared/episode/user-turns';
import type { RewardInput } from '#shared/rewards/input';
import type { BfclEnv } from './client.ts';
import { bfclEntryOf, groundTruthOf } from './entry.ts';
import type { TurnCheck } from './protocol.ts';
import { callsByUserTurn } from './trajectory.ts';

export interface BfclCheck {
  /** Checked turns passed / checked turns (EnvTuning's progress reward). */
  progress: number;
  /** 1 when BFCL's multi_turn_checker accepts the trajectory and the episode ended normally. */
  success: 0 | 1;
  turnsPassed: number;
  /** User turns with a non-empty ground truth (the ones BFCL checks). */
  turnsChecked: number;
  /** One check per user turn of the ground truth. */
  turns: TurnCheck[];
  /** Why success is 0 (BFCL's error type), or null. */
  failure: string | null;
}

export async function checkTrajectory(
  env: BfclEnv,
  input: Pick<RewardInput, 'turns' | 'finishReason' | 'groundTruth' | 'extraInfo'>,
): Promise<BfclCheck> {
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
  if (modelTurns.length > groundTruth.length)
    throw new Error(
      `the trajectory has ${modelTurns.length} user turns but the ground truth ${groundTruth.length}`,
    );
  const result = await env.score(entry, groundTruth, modelTurns, input.finishReason !== 'eos');
  // Turns whose ground truth is empty (the model should ask, or decline) are not checked by BFCL; like the
  // EnvTuning seed, progress counts only the turns that are.
  const checked = result.turns.filter((_, t) => groundTruth[t]!.length > 0);
  const turnsPassed = checked.filter((t) => t.passed).length;
  return {
    progress: checked.length > 0 ? turnsPassed / checked.length : result.success.valid ? 1 : 0,
    success: result.success.valid ? 1 : 0,
    turnsPassed,
    turnsChecked: checked.length,
    turns: result.turns,
    failure: result.success.valid ? null : result.success.errorType,
  };
}
