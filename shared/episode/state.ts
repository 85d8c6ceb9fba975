// What the episode logic is told about a generated turn and the decisions it hands back. The episode's state
// itself is a contract (messages carry it), declared in shared/schemas/episode-state.ts.
import { z } from 'zod';
import type { ChatMessageSchema } from '#shared/schemas/chat';
import type { ToolCallSchema, ToolErrorSchema } from '#shared/schemas/tool-result';
import { type FinishReasonSchema, TurnStopSchema } from '#shared/schemas/trajectory';

// Re-exported so the episode logic and its callers import the state from one place.
export {
  type EpisodeState,
  EpisodeStateSchema,
  type PendingTurn,
  PendingTurnSchema,
  type PlannedCall,
  PlannedCallSchema,
} from '#shared/schemas/episode-state';

/** What the engine reports about one generated assistant turn. Token counts come from the engine. */
export const AssistantTurnSchema = z.object({
  /** The decoded text of the turn's sampled tokens. */
  text: z.string(),
  stop: TurnStopSchema,
  generatedTokens: z.number().int().nonnegative(),
  policyVersion: z.number().int().nonnegative().default(0),
});
export type AssistantTurn = z.input<typeof AssistantTurnSchema>;

/** A call the model wrote that is not executed; the model sees `error` as the call's result. */
export interface RejectedCall {
  /** Position among the calls the model wrote in this turn. */
  index: number;
  name: string;
  arguments: unknown;
  error: z.infer<typeof ToolErrorSchema>;
}

/**
 * What to do after an assistant turn. After `call_tools`, run `calls` (possibly none: a turn with only
 * malformed calls still gets their errors back, and a turn that ended a user turn gets the next user turn) and
 * pass their results, in order, to onToolResults, whose messages are appended before the next turn.
 */
export type Decision =
  | {
      kind: 'call_tools';
      calls: z.infer<typeof ToolCallSchema>[];
      rejected: RejectedCall[];
      /** The model ended a user turn and another follows: these user messages are appended (calls is empty). */
      userMessages?: z.infer<typeof ChatMessageSchema>[];
    }
  | { kind: 'finish'; reason: z.infer<typeof FinishReasonSchema> };

/** What to do after the tool messages were appended: generate at most `maxNewTokens`, or stop. */
export type Next =
  | { kind: 'generate'; maxNewTokens: number }
  | { kind: 'finish'; reason: z.infer<typeof FinishReasonSchema> };
