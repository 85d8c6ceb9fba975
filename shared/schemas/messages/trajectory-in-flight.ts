// One sample of a group between stages: everything needed to continue it in another process — the engine's
// token state (tokens, mask, log-probs, versions, template text) and the episode logic's state (turns, calls,
// budgets) — and, once finished, to score it.
import { z } from 'zod';
import { EpisodeStateSchema } from '../episode-state.ts';
import { GroupRefSchema, TaskRowSchema } from './group-ref.ts';
import { TokenStateWireSchema, TrajectorySegmentWireSchema } from './token-arrays.ts';

/**
 * @example {"schemaVersion": 1, "group": {"runId": "r-1a2b", "groupId": "e0-p17", "promptId": "p17",
 *   "epoch": 0, "stage": null, "split": "train", "dataSource": "calc", "groupSize": 8}, "sampleIndex": 3,
 *   "row": {"data_source": "calc", "prompt": [{"role": "user", "content": "17*23?"}]},
 *   "tokens": {"…": "TokenState (shared/schemas/token-state.ts)"},
 *   "episode": {"…": "EpisodeState (shared/schemas/episode-state.ts)"}}
 */
export const TrajectoryInFlightSchema = z.object({
  schemaVersion: z.literal(1),
  group: GroupRefSchema,
  sampleIndex: z.number().int().nonnegative(),
  row: TaskRowSchema,
  tokens: TokenStateWireSchema,
  episode: EpisodeStateSchema,
  /** Agent episodes whose agent rewrote its history: the earlier token sequences (TrajectorySegmentSchema). */
  segments: z.array(TrajectorySegmentWireSchema).optional(),
});
export type TrajectoryInFlight = z.infer<typeof TrajectoryInFlightSchema>;
