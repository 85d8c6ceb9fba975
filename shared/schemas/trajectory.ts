// A trajectory: the token-level record the learner trains on plus the per-turn record rewards read.
// The learner never needs a tokenizer: token ids, loss mask and behaviour log-probs are all it reads.
import { z } from 'zod';
import { ChatMessageSchema } from './chat.ts';
import { ToolCallRecordSchema } from './tool-result.ts';

/**
 * Why an episode ended. `length`: a turn hit the per-turn token budget without a stop. `timeout`: an agent episode
 * (`rollout.agent`) ran past its wall-clock limit.
 */
export const FinishReasonSchema = z.enum([
  'eos',
  'max_turns',
  'max_tool_calls',
  'max_total_response_length',
  'length',
  'error',
  'timeout',
]);
export type FinishReason = z.infer<typeof FinishReasonSchema>;

/** Why one assistant turn stopped generating. */
export const TurnStopSchema = z.enum(['eos', 'tool_call', 'length']);
export type TurnStop = z.infer<typeof TurnStopSchema>;

/** One assistant turn: what was sampled, the calls parsed from it and their results. */
export const TurnRecordSchema = z
  .object({
    turn: z.number().int().nonnegative(),
    policyVersion: z.number().int().nonnegative(),
    text: z.string().describe('Decoded text of the sampled tokens of this turn.'),
    content: z.string().describe('Text outside tool calls.'),
    toolCalls: z.array(ToolCallRecordSchema),
    parseErrors: z.array(z.object({ message: z.string() })),
    stop: TurnStopSchema,
    tokenStart: z
      .number()
      .int()
      .nonnegative()
      .describe("[tokenStart, tokenEnd): this turn's sampled tokens inside `tokenIds`."),
    tokenEnd: z.number().int().nonnegative(),
  })
  .describe('One assistant turn: what was sampled, the calls parsed from it and their results.');
export type TurnRecord = z.infer<typeof TurnRecordSchema>;

const tokenLevel = {
  tokenIds: z
    .array(z.number().int().nonnegative())
    .describe(
      "Prompt + every turn, exactly as sampled or appended (tool results as the chat template's delta).",
    ),
  promptLength: z.number().int().nonnegative().describe('Tokens before the first generated one.'),
  lossMask: z
    .array(z.union([z.literal(0), z.literal(1)]))
    .describe('1 on tokens the policy sampled, 0 on prompt and tool-result tokens; same length as tokenIds.'),
  behaviorLogprobs: z
    .array(z.number())
    .describe('log p(token) under logits / temperature at sampling time; 0 where lossMask is 0.'),
  policyVersions: z
    .array(z.number().int().min(-1))
    .describe('The policy version that sampled each token; -1 where lossMask is 0.'),
};

type TokenLevel = { [K in keyof typeof tokenLevel]: z.infer<(typeof tokenLevel)[K]> };

/** The token arrays have one entry per token, and the prompt is no longer than the tokens. */
function sameLengths(t: TokenLevel, ctx: z.RefinementCtx): void {
  const n = t.tokenIds.length;
  for (const key of ['lossMask', 'behaviorLogprobs', 'policyVersions'] as const) {
    if (t[key].length !== n) {
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `${key} has ${t[key].length} entries, tokenIds ${n}`,
      });
    }
  }
  if (t.promptLength > n) {
    ctx.addIssue({
      code: 'custom',
      path: ['promptLength'],
      message: `promptLength ${t.promptLength} > ${n} tokens`,
    });
  }
}

/**
 * An earlier part of an agent episode (`rollout.agent`): the agent sent a conversation that did not extend the
 * tokens held (it rewrote its history), so that part ended here and the episode went on in a new token sequence.
 * The learner trains it as a sequence of its own with the episode's advantage. Its turns are the trajectory's
 * `turns[turnStart:turnEnd]`, whose token ranges index this segment's `tokenIds`.
 * @example {"tokenIds": [1, 2, 3], "promptLength": 2, "lossMask": [0, 0, 1], "behaviorLogprobs": [0, 0, -0.7],
 *   "policyVersions": [-1, -1, 3], "turnStart": 0, "turnEnd": 1,
 *   "reason": "the agent's request no longer extends the conversation: message 1 (assistant) differs"}
 */
export const TrajectorySegmentSchema = z
  .object({
    ...tokenLevel,
    turnStart: z.number().int().nonnegative(),
    turnEnd: z.number().int().nonnegative(),
    reason: z.string().describe('Why the episode left this sequence for a new one.'),
  })
  .superRefine(sameLengths)
  .describe(
    'An earlier part of an agent episode (`rollout.agent`): the agent rewrote its history, so that part ended ' +
      "here and the episode went on in a new token sequence. Trained as a sequence of its own with the episode's " +
      "advantage; its turns are the trajectory's `turns[turnStart:turnEnd]`, whose token ranges index its `tokenIds`.",
  );
export type TrajectorySegment = z.infer<typeof TrajectorySegmentSchema>;

/**
 * A finished (not yet scored) trajectory of one sample of a group.
 * @example {"sampleIndex": 0, "tokenIds": [1, 2, 3], "promptLength": 2, "lossMask": [0, 0, 1],
 *   "behaviorLogprobs": [0, 0, -0.7], "policyVersions": [-1, -1, 3], "finishReason": "eos",
 *   "turns": [], "messages": []}
 */
export const RolloutTrajectorySchema = z
  .object({
    sampleIndex: z.number().int().nonnegative(),
    ...tokenLevel,
    finishReason: FinishReasonSchema,
    turns: z.array(TurnRecordSchema),
    messages: z
      .array(ChatMessageSchema)
      .describe('The conversation: prompt messages, assistant turns and tool results.'),
    segments: z
      .array(TrajectorySegmentSchema)
      .optional()
      .describe(
        "Agent episodes only, when the agent rewrote its history: the earlier token sequences, in order (this trajectory's own tokens are the last part). Its `turns` before the last segment's `turnEnd` are theirs.",
      ),
  })
  .superRefine(sameLengths);
export type RolloutTrajectory = z.infer<typeof RolloutTrajectorySchema>;

/** A scored trajectory: the reward and its named components (for logging). */
export const TrajectorySchema = RolloutTrajectorySchema.safeExtend({
  reward: z.number(),
  rewardComponents: z.record(z.string(), z.number()),
  rewardErrors: z
    .array(z.object({ reward: z.string(), message: z.string() }))
    .optional()
    .describe(
      'Rewards that could not score this trajectory (a Python reward function that raised or ran out of time; a stateful tool whose calc_reward failed): each counted 0. Absent when every reward scored.',
    ),
}).describe(
  "One of the group's G samples, scored: every token as sampled or appended, the per-token training data, the " +
    'turns and the reward with its named components.',
);
export type Trajectory = z.infer<typeof TrajectorySchema>;
