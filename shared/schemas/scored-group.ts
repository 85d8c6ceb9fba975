// The scored group: the contract between rollout engine, pipeline and learner.
import { z } from 'zod';
import { TrajectorySchema } from './trajectory.ts';

export const SCHEMA_VERSION = 1 as const;

/**
 * G scored trajectories of one prompt in one epoch. Written once to `runs/<runId>/groups/<groupId>.json`.
 * @example {"schemaVersion": 1, "runId": "r-1a2b", "groupId": "e0-p17", "promptId": "p17", "epoch": 0,
 *   "stage": null, "split": "train", "dataSource": "calc", "trajectories": []}
 */
export const ScoredGroupSchema = z
  .object({
    schemaVersion: z.literal(SCHEMA_VERSION),
    runId: z.string().min(1),
    groupId: z.string().min(1),
    promptId: z.string().min(1),
    epoch: z.number().int().nonnegative(),
    stage: z.string().nullable().default(null),
    split: z.enum(['train', 'val']).default('train'),
    dataSource: z.string(),
    position: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .optional()
      .describe("The group's place in the feeder's walk (GroupRef.position); null for validation groups."),
    trajectories: z.array(TrajectorySchema).min(1),
    completedBy: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe(
        "The sample whose reward handler wrote this manifest. Only that sample's (re)delivery sends the scored-group message, so a crash between the write and the send is repaired by its redelivery.",
      ),
  })
  .describe(
    'G scored trajectories of one prompt in one epoch, written once to `runs/<runId>/groups/<groupId>.json`.',
  );
export type ScoredGroup = z.infer<typeof ScoredGroupSchema>;

/**
 * The scored-groups queue message: a claim check on the group manifest.
 * @example {"schemaVersion": 1, "runId": "r-1a2b", "groupId": "e0-p17",
 *   "manifestKey": "runs/r-1a2b/groups/e0-p17.json", "sha256": "9f86d0…"}
 */
export const ScoredGroupMessageSchema = z
  .object({
    schemaVersion: z.literal(SCHEMA_VERSION),
    runId: z.string().min(1),
    groupId: z.string().min(1),
    manifestKey: z.string().min(1),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    position: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .optional()
      .describe(
        'GroupRef.position, so a deterministic learner can place a group whose manifest it cannot read.',
      ),
  })
  .describe('The scored-groups queue message: a claim check on the group manifest.');
export type ScoredGroupMessage = z.infer<typeof ScoredGroupMessageSchema>;
