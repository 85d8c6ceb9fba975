// Who a piece of rollout work belongs to: the run, the group (prompt x epoch, or a validation prompt x
// policy version) and where the prompt came from. Carried by every rollout-side message.
import { z } from 'zod';
import { fill, templatePattern } from '#shared/templates';

/**
 * How group and prompt ids are formed (`{name}` templates, generated into json/constants.json with the key
 * layout): a train group is a prompt in an epoch (scoped by the curriculum stage's index when the run has
 * stages); a validation group is a validation prompt under one policy version.
 */
export const ID_TEMPLATES = {
  trainGroup: 'e{epoch}-p{row}',
  trainPrompt: 'p{row}',
  stageGroup: 's{stage}-e{epoch}-p{row}',
  stagePrompt: 's{stage}-p{row}',
  valGroup: 'val-v{version}-p{index}',
  valPrompt: 'val-p{index}',
} as const;

/** Group and prompt ids of a train slot; `stage` is the curriculum stage's index, null without stages. */
export function trainIds(
  stage: number | null,
  epoch: number,
  row: number,
): { groupId: string; promptId: string } {
  return stage === null
    ? {
        groupId: fill(ID_TEMPLATES.trainGroup, { epoch, row }),
        promptId: fill(ID_TEMPLATES.trainPrompt, { row }),
      }
    : {
        groupId: fill(ID_TEMPLATES.stageGroup, { stage, epoch, row }),
        promptId: fill(ID_TEMPLATES.stagePrompt, { stage, row }),
      };
}

/** Group and prompt ids of validation prompt `index` under policy `version`. */
export const valIds = (version: number, index: number): { groupId: string; promptId: string } => ({
  groupId: fill(ID_TEMPLATES.valGroup, { version, index }),
  promptId: fill(ID_TEMPLATES.valPrompt, { index }),
});

/** What every validation group id of `version` starts with (and no other version's does). */
export const valGroupIdPrefix = (version: number): string =>
  ID_TEMPLATES.valGroup
    .slice(0, ID_TEMPLATES.valGroup.indexOf('{index}'))
    .replace('{version}', String(version));

const VAL_GROUP = templatePattern(ID_TEMPLATES.valGroup, { version: '\\d+', index: '\\d+' });

/** The policy version a validation group id names; undefined for any other id. */
export function valGroupVersion(groupId: string): number | undefined {
  const version = VAL_GROUP.exec(groupId)?.groups?.version;
  return version === undefined ? undefined : Number(version);
}

/**
 * @example {"runId": "r-1a2b", "groupId": "e0-p17", "promptId": "p17", "epoch": 0, "stage": null,
 *   "split": "train", "dataSource": "calc", "groupSize": 8, "policyVersion": null}
 */
export const GroupRefSchema = z.object({
  runId: z.string().min(1),
  /** As `ID_TEMPLATES` forms it: `e<epoch>-p<row>` (`s<stage>-e<epoch>-p<row>` with a curriculum) or `val-v<version>-p<index>`. */
  groupId: z.string().min(1),
  promptId: z.string().min(1),
  epoch: z.number().int().nonnegative(),
  stage: z.string().nullable(),
  split: z.enum(['train', 'val']),
  dataSource: z.string(),
  /** G: samples in the group; the group is complete when this many scored trajectories exist. */
  groupSize: z.number().int().positive(),
  /**
   * Validation groups are rolled out by exactly this policy version (so an evaluation measures one version);
   * null: the newest version the rollout stage can load (train groups).
   */
  policyVersion: z.number().int().nonnegative().nullable().default(null),
  /**
   * A train group's place in the feeder's walk (0, 1, …): batch `position / batch_prompts`. In deterministic runs the
   * learner trains batches in this order; null for validation groups and messages from before it existed.
   */
  position: z.number().int().nonnegative().nullable().optional(),
});
export type GroupRef = z.infer<typeof GroupRefSchema>;

/**
 * The dataset row the prompt came from (verl's columns: prompt, data_source, reward_model, extra_info), kept
 * whole so rewards and per-row tools see everything; the stages parse it with the dataset-row schema.
 */
export const TaskRowSchema = z.record(z.string(), z.unknown());
export type TaskRow = z.infer<typeof TaskRowSchema>;
