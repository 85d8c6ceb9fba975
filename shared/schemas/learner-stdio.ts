// The learner's stdio protocol (JSON lines) and its status file. The embedded runtime drives
// `python -m toolrl_learner stdio --root DIR --run-id ID [--max-steps N]` with these; logs go to stderr.
import { z } from 'zod';
import { ScoredGroupMessageSchema, ScoredGroupSchema } from './scored-group.ts';

/**
 * stdin: a group by reference (the scored-groups queue message, manifest read from the blob store and
 * checked against `sha256`).
 * @example {"type": "group", "schemaVersion": 1, "runId": "r-1a2b", "groupId": "e0-p17",
 *   "manifestKey": "runs/r-1a2b/groups/e0-p17.json", "sha256": "9f86d0…"}
 */
export const LearnerGroupRefLineSchema = ScoredGroupMessageSchema.extend({ type: z.literal('group') });

/**
 * stdin: a group inline (tests, debugging).
 * @example {"type": "group", "group": {"schemaVersion": 1, "runId": "r-1a2b", "groupId": "e0-p17", …}}
 */
export const LearnerGroupInlineLineSchema = z.object({ type: z.literal('group'), group: ScoredGroupSchema });

/** stdin: finish: train what is buffered, publish a final version, checkpoint, say `done`, exit 0. EOF does the same. */
export const LearnerStopLineSchema = z.object({ type: z.literal('stop') });

export const LearnerInputLineSchema = z.union([
  LearnerGroupInlineLineSchema,
  LearnerGroupRefLineSchema,
  LearnerStopLineSchema,
]);
export type LearnerInputLine = z.infer<typeof LearnerInputLineSchema>;

/**
 * Loaded (or resumed) and a policy is published; groups may be sent from now on.
 * @example {"type": "ready", "policyVersion": 0, "resumedFromStep": null}
 */
export const LearnerReadyLineSchema = z.object({
  type: z.literal('ready'),
  policyVersion: z.number().int().nonnegative(),
  resumedFromStep: z.number().int().nonnegative().nullable(),
});

/**
 * `policy/v<version>/` is complete and `LATEST.json` points at it.
 * @example {"type": "published", "version": 1, "prefix": "runs/r-1a2b/policy/v1/", "sha256": "…"}
 */
export const LearnerPublishedLineSchema = z.object({
  type: z.literal('published'),
  version: z.number().int().nonnegative(),
  prefix: z.string().min(1),
  /** sha256 of the bundle's manifest.json (the same as LATEST.json's). */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

/**
 * One optimiser step done; `metrics` is the line written to metrics.jsonl (snake_case keys).
 * @example {"type": "step", "step": 3, "metrics": {"step": 3, "policy_version": 2, "reward_mean": 0.5}}
 */
export const LearnerStepLineSchema = z.object({
  type: z.literal('step'),
  step: z.number().int().positive(),
  metrics: z.record(z.string(), z.number().nullable()),
});

/**
 * A checkpoint covering these groups is complete: every queue message of these groups (redelivered copies
 * too) may be deleted now. Lists every group settled since the previous commit: trained ones, and those
 * dropped as stale, no_signal, or as a duplicate of an already committed group.
 * @example {"type": "committed", "step": 10, "groupIds": ["e0-p17", "e0-p3"]}
 */
export const LearnerCommittedLineSchema = z.object({
  type: z.literal('committed'),
  step: z.number().int().nonnegative(),
  groupIds: z.array(z.string()),
});

/**
 * A group that will not be trained on. `stale` and `no_signal` are settled by the next `committed` (delete
 * the message then); a `duplicate` of a group still in flight is settled by that group's `committed`, of an
 * already committed one by the next `committed`. `invalid` (unreadable manifest, sha256 mismatch, schema
 * error, wrong run) is never committed: dead-letter the message with `message` as the reason. `dead_lettered`:
 * a stage dead-lettered a message of the group (its record is under `runs/<runId>/dead-letters/`), so it will
 * not arrive; nothing to delete. Stale, no_signal, invalid and dead_lettered groups of this run count as
 * dropped in state.json; duplicates do not.
 * @example {"type": "dropped", "groupId": "e0-p17", "reason": "stale", "message": "oldest token v0, policy v3"}
 */
export const LearnerDroppedLineSchema = z.object({
  type: z.literal('dropped'),
  groupId: z.string(),
  reason: z.enum(['stale', 'duplicate', 'no_signal', 'invalid', 'dead_lettered']),
  message: z.string().optional(),
});

/**
 * One step of the SFT warm start (`trainer.sft`), before the learner is `ready`: progress for the user.
 * @example {"type": "sft", "step": 12, "steps": 150, "loss": 0.83}
 */
export const LearnerSftLineSchema = z.object({
  type: z.literal('sft'),
  step: z.number().int().positive(),
  steps: z.number().int().positive(),
  loss: z.number(),
});

/**
 * `runs/<runId>/learner/state.json`, rewritten after every step (read by `toolrl status`).
 * @example {"step": 12, "policyVersion": 12, "groupsConsumed": 96, "groupsDropped": 4, "rewardMean": 0.61,
 *   "done": false, "updatedAt": "2025-01-01T00:00:00.000Z"}
 */
export const LearnerStateSchema = z.object({
  step: z.number().int().nonnegative(),
  policyVersion: z.number().int().nonnegative(),
  /** Groups trained on (committed or not). */
  groupsConsumed: z.number().int().nonnegative(),
  /** Groups dropped as stale, no_signal, invalid or dead-lettered (duplicates are not: counted once already). */
  groupsDropped: z.number().int().nonnegative(),
  /** Mean reward of the last step's trajectories; null before the first step. */
  rewardMean: z.number().nullable(),
  done: z.boolean(),
  /**
   * Why the learner stopped the run without finishing it (done is true): no batch trained in
   * `algorithm.max_num_gen_batches` in a row, or the run ended having trained nothing. The run fails with it.
   */
  failed: z.string().optional(),
  updatedAt: z.string(),
  /**
   * Deterministic runs (`trainer.deterministic`): whole batches settled (trained or dropped) and the policy version
   * after each of the last few: `versions[i]` is the version after `settled - versions.length + 1 + i` batches
   * (after 0 batches: the first published policy). The feeder pins the groups of batch t to the version after
   * t - max_staleness batches.
   */
  batches: z
    .object({
      settled: z.number().int().nonnegative(),
      versions: z.array(z.number().int().nonnegative()).min(1),
    })
    .optional(),
});
export type LearnerState = z.infer<typeof LearnerStateSchema>;

/**
 * `runs/<runId>/learner/warm-start.json`, rewritten every `logging.progress_interval_s` while the learner's SFT warm
 * start runs (the run's, or a curriculum stage's), and once at its end (read by `toolrl status`).
 * @example {"stage": null, "step": 312, "steps": 700, "loss": 0.41, "done": false,
 *   "updatedAt": "2025-01-01T00:00:00.000Z"}
 */
export const LearnerWarmStartSchema = z.object({
  /** The curriculum stage whose warm start this is; null for the run's own (`trainer.sft`). */
  stage: z.string().nullable(),
  step: z.number().int().nonnegative(),
  steps: z.number().int().positive(),
  loss: z.number().nullable(),
  done: z.boolean(),
  updatedAt: z.string(),
});
export type LearnerWarmStart = z.infer<typeof LearnerWarmStartSchema>;

/**
 * `runs/<runId>/learner/state.json` was just rewritten (after a step, a publish, a commit, at the end); `state` is
 * what it now says. The embedded runtime turns it into the S3 notification the state file's write sends on AWS,
 * so the feeder tops up only once the consumed counts are on record.
 * @example {"type": "state", "state": {"step": 2, "policyVersion": 2, "groupsConsumed": 4, "groupsDropped": 0,
 *   "rewardMean": 0.5, "done": false, "updatedAt": "2025-01-01T00:00:00.000Z"}}
 */
export const LearnerStateLineSchema = z.object({ type: z.literal('state'), state: LearnerStateSchema });

/**
 * No input for a while and nothing to do until more groups come: what the learner waits for. Said once per idle
 * spell (again after any other line); the embedded runtime fails a run whose learner waits while no queue holds
 * anything that could bring it groups (runtime/stall-watch.ts).
 * `linesRead`: the input lines it had read when it said so; a line written to it since is work it has not seen
 * yet, so it is not waiting any more (a group it trains a long step on, say).
 * @example {"type": "waiting", "waitingFor": "step 5, batch 4 (feeder positions 8-9): 0 of 2 in, missing 8-9 (8 of 24 planned groups settled)", "linesRead": 9}
 */
export const LearnerWaitingLineSchema = z.object({
  type: z.literal('waiting'),
  waitingFor: z.string(),
  linesRead: z.number().int().min(0),
});

/** The run is finished (planned groups consumed or max steps reached); the process exits 0. */
export const LearnerDoneLineSchema = z.object({ type: z.literal('done') });

/** A fatal error; the process exits non-zero after printing it. Bad input lines are `dropped`, not errors. */
export const LearnerErrorLineSchema = z.object({ type: z.literal('error'), message: z.string() });

export const LearnerOutputLineSchema = z.discriminatedUnion('type', [
  LearnerReadyLineSchema,
  LearnerPublishedLineSchema,
  LearnerStepLineSchema,
  LearnerCommittedLineSchema,
  LearnerDroppedLineSchema,
  LearnerDoneLineSchema,
  LearnerErrorLineSchema,
  LearnerSftLineSchema,
  LearnerStateLineSchema,
  LearnerWaitingLineSchema,
]);
export type LearnerOutputLine = z.infer<typeof LearnerOutputLineSchema>;
