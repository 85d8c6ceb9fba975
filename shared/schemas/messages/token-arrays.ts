// Fast validators for the per-token arrays that cross every pipeline hop (hundreds to thousands of numbers
// per trajectory). They check exactly what the contract schemas check (integers, bounds, 0/1 masks), but in
// one loop instead of one zod schema per element, which made validation the pipeline's main overhead.
import { z } from 'zod';
import { TokenStateSchema } from '../token-state.ts';
import { TrajectorySchema, TrajectorySegmentSchema } from '../trajectory.ts';

const ints = (min: number, what: string) =>
  z.custom<number[]>(
    (v) => Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= min),
    `expected an array of integers >= ${min} (${what})`,
  );

export const TokenIdsSchema = ints(0, 'token ids');
export const PolicyVersionsSchema = ints(-1, 'policy versions');
export const LossMaskSchema = z.custom<(0 | 1)[]>(
  (v) => Array.isArray(v) && v.every((x) => x === 0 || x === 1),
  'expected an array of 0 and 1 (loss mask)',
);
export const LogprobsSchema = z.custom<number[]>(
  (v) => Array.isArray(v) && v.every((x) => typeof x === 'number' && Number.isFinite(x)),
  'expected an array of finite numbers (log-probs)',
);

const fastArrays = {
  tokenIds: TokenIdsSchema,
  lossMask: LossMaskSchema,
  behaviorLogprobs: LogprobsSchema,
  policyVersions: PolicyVersionsSchema,
};

function sameLengths(
  t: { tokenIds: number[] } & Record<(typeof ARRAYS)[number], unknown[]>,
  ctx: z.RefinementCtx,
): void {
  for (const key of ARRAYS)
    if (t[key].length !== t.tokenIds.length)
      ctx.addIssue({
        code: 'custom',
        path: [key],
        message: `${key} has ${t[key].length} entries, tokenIds ${t.tokenIds.length}`,
      });
}
const ARRAYS = ['lossMask', 'behaviorLogprobs', 'policyVersions'] as const;

/** shared/policy's TokenStateSchema with the token arrays checked in one pass each. */
export const TokenStateWireSchema = z
  .object({ ...TokenStateSchema.shape, ...fastArrays })
  .superRefine(sameLengths);

function promptWithin(t: { tokenIds: number[]; promptLength: number }, ctx: z.RefinementCtx): void {
  if (t.promptLength > t.tokenIds.length)
    ctx.addIssue({
      code: 'custom',
      path: ['promptLength'],
      message: `promptLength ${t.promptLength} > ${t.tokenIds.length} tokens`,
    });
}

/** An agent episode's earlier token sequence (TrajectorySegmentSchema), its arrays checked in one pass each. */
export const TrajectorySegmentWireSchema = z
  .object({ ...TrajectorySegmentSchema.shape, ...fastArrays })
  .superRefine((t, ctx) => {
    sameLengths(t, ctx);
    promptWithin(t, ctx);
  });

/** shared/schemas' TrajectorySchema (a scored trajectory) with the token arrays checked in one pass each. */
export const TrajectoryWireSchema = z
  .object({
    ...TrajectorySchema.shape,
    ...fastArrays,
    segments: z.array(TrajectorySegmentWireSchema).optional(),
  })
  .superRefine((t, ctx) => {
    sameLengths(t, ctx);
    promptWithin(t, ctx);
  });
