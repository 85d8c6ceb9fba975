// The token-level record of one trajectory while it is being rolled out: serialisable, so the pipeline can pass
// it through a queue and another process can continue it. Its token fields map 1:1 onto RolloutTrajectorySchema.
// The policy engine works on it (shared/policy/token-state.ts); rollout messages carry it.
import { z } from 'zod';
import { ChatMessageSchema, ToolSchemaSchema } from './chat.ts';
import { TurnStopSchema } from './trajectory.ts';

/** One generated turn's span of sampled tokens. */
export const TurnTokensSchema = z.object({
  turn: z.number().int().nonnegative(),
  policyVersion: z.number().int().nonnegative(),
  /** [tokenStart, tokenEnd): the sampled tokens inside `tokenIds`. */
  tokenStart: z.number().int().nonnegative(),
  tokenEnd: z.number().int().nonnegative(),
  stop: TurnStopSchema,
  /** Decoded sampled text without a final EOS token: the assistant message's content. */
  text: z.string(),
});
export type TurnTokens = z.infer<typeof TurnTokensSchema>;

/**
 * The check that the chat template, re-rendered with the new messages, extends the text of the tokens we hold.
 * `ok: false` records where they part (the template rewrote an earlier turn, e.g. dropped a `<think>` block).
 */
export const PrefixCheckSchema = z.object({
  /** The turn about to be generated when the check ran. */
  turn: z.number().int().nonnegative(),
  ok: z.boolean(),
  /** Character offset of the first difference (ok: false). */
  offset: z.number().int().nonnegative().optional(),
  /** ~40 characters from `offset` of what the tokens say and of what the template rendered. */
  held: z.string().optional(),
  rendered: z.string().optional(),
  /** The template's end-of-turn marker that the turn's sampled EOS (a different one) stood for. */
  eosAs: z.string().optional(),
});
export type PrefixCheck = z.infer<typeof PrefixCheckSchema>;

export const TokenStateSchema = z
  .object({
    schemaVersion: z.literal(1),
    sampleIndex: z.number().int().nonnegative(),
    /** The sampling seed; turn t of this sample draws from the stream (seed, sampleIndex, t). */
    seed: z.number().int(),
    tokenIds: z.array(z.number().int().nonnegative()),
    promptLength: z.number().int().nonnegative(),
    lossMask: z.array(z.union([z.literal(0), z.literal(1)])),
    behaviorLogprobs: z.array(z.number()),
    policyVersions: z.array(z.number().int().min(-1)),
    /** The conversation as the template sees it: assistant turns carry their sampled text verbatim. */
    messages: z.array(ChatMessageSchema),
    tools: z.array(ToolSchemaSchema),
    /** The text `tokenIds` stand for: template output for appended spans, decoded text for sampled ones. */
    text: z.string(),
    turns: z.array(TurnTokensSchema),
    prefixChecks: z.array(PrefixCheckSchema),
    /** Key of this trajectory's KV cache in the process that sampled it (a hint: absent elsewhere -> re-prefill). */
    cacheKey: z.string().nullable(),
  })
  .superRefine((s, ctx) => {
    const n = s.tokenIds.length;
    for (const key of ['lossMask', 'behaviorLogprobs', 'policyVersions'] as const)
      if (s[key].length !== n)
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `${key} has ${s[key].length} entries, tokenIds ${n}`,
        });
  });
export type TokenState = z.infer<typeof TokenStateSchema>;
