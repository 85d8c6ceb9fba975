// The state of one multi-turn episode: plain JSON with a zod schema because the pipeline carries it between the
// rollout and tool-call stages in messages. The episode logic that moves it on is shared/episode/.
import { z } from 'zod';
import { ChatMessageSchema } from './chat.ts';
import { MultiTurnConfigSchema } from './config/rollout.ts';
import { ToolCallSchema, ToolErrorSchema } from './tool-result.ts';
import { FinishReasonSchema, TurnRecordSchema } from './trajectory.ts';

/** One call the model wrote in the pending turn, in the model's order: run it, or not and why. */
export const PlannedCallSchema = ToolCallSchema.extend({
  /** null: run it; otherwise the error the model sees in place of a result. */
  rejection: ToolErrorSchema.nullable(),
});
export type PlannedCall = z.infer<typeof PlannedCallSchema>;

/** The turn whose calls are out for execution: its record minus the calls, and the plan for them. */
export const PendingTurnSchema = z.object({
  record: TurnRecordSchema.omit({ toolCalls: true }),
  plan: z.array(PlannedCallSchema),
  /** The next user turn's messages, when this turn ended a user turn of a multi-turn row (plan is then empty). */
  userMessages: z.array(ChatMessageSchema).optional(),
});
export type PendingTurn = z.infer<typeof PendingTurnSchema>;

/**
 * How an agent episode (`rollout.agent`) went, for the rewards (they read it as `extra_info.agent`) and the logs:
 * what the agent returned (`answer`: its final answer text, when it gave one; `output`: a dict it returned), why it
 * failed, how many requests its endpoint served and how many token sequences the episode took.
 * @example {"answer": "\\boxed{628}", "output": null, "error": null, "requests": 2, "segments": 1}
 */
export const AgentOutcomeSchema = z.object({
  answer: z.string().nullable(),
  output: z.unknown(),
  error: z.string().nullable(),
  requests: z.number().int().nonnegative(),
  segments: z.number().int().positive(),
});
export type AgentOutcome = z.infer<typeof AgentOutcomeSchema>;

/**
 * Where an episode stands. `phase` says which function comes next:
 * `generate` -> onAssistantTurn, `tools` -> onToolResults, `append` -> appendedTokens, `done` -> none.
 * @example {"config": {"max_turns": 4, …}, "phase": "generate", "promptTokens": 57, "responseTokens": 0,
 *   "toolCallsUsed": 0, "messages": [{"role": "user", "content": "What is 17 * 23?"}], "turns": [],
 *   "pending": null, "finishReason": null, "error": null}
 */
export const EpisodeStateSchema = z.object({
  config: MultiTurnConfigSchema,
  phase: z.enum(['generate', 'tools', 'append', 'done']),
  /** Tokens of the prompt; turn token ranges are offsets into prompt + response. */
  promptTokens: z.number().int().nonnegative(),
  /** Generated plus appended tokens after the prompt: what `max_total_response_length` bounds. */
  responseTokens: z.number().int().nonnegative(),
  /** Calls executed so far (rejected calls do not count): what `max_tool_calls` bounds. */
  toolCallsUsed: z.number().int().nonnegative(),
  messages: z.array(ChatMessageSchema),
  /** Completed turns, with their calls' results. */
  turns: z.array(TurnRecordSchema),
  pending: PendingTurnSchema.nullable(),
  finishReason: FinishReasonSchema.nullable(),
  /** Why the episode failed, when finishReason is `error`. */
  error: z.string().nullable(),
  /**
   * Rows with several user turns (BFCL multi-turn): the user turns after the prompt, fed one by one when the model
   * ends a turn without a call attempt. Absent for single-turn rows.
   */
  userTurns: z.array(z.array(ChatMessageSchema)).optional(),
  /** The user turn the episode is in: 0 for the prompt's; present when `userTurns` is. */
  userTurn: z.number().int().nonnegative().optional(),
  /** Agent episodes only: how the user's agent ended (AgentOutcomeSchema). */
  agent: AgentOutcomeSchema.optional(),
});
export type EpisodeState = z.infer<typeof EpisodeStateSchema>;
