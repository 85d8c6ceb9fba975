// The claim check: a message too large for the queue is stored in the blob store and the queue carries
// this envelope instead; the reader verifies the hash before trusting the payload.
import { z } from 'zod';

/**
 * @example {"schemaVersion": 1, "claimCheck": {"key": "runs/r-1a2b/messages/9f86d0….json",
 *   "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "bytes": 312000}}
 */
export const ClaimCheckEnvelopeSchema = z
  .object({
    schemaVersion: z.literal(1),
    claimCheck: z.object({
      key: z.string().min(1),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
      bytes: z.number().int().nonnegative(),
    }),
  })
  .strict();
export type ClaimCheckEnvelope = z.infer<typeof ClaimCheckEnvelopeSchema>;
