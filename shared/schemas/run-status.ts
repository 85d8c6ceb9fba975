// `runs/<runId>/run.json`: the run's resolved config, its plan and its status. Created once by the
// run-starter (put-if-absent), then updated by compare-and-swap; the learner reads `config` and `totals`.
import { z } from 'zod';
import { RunConfigSchema } from './config/run.ts';

export const RunStateSchema = z.enum(['starting', 'running', 'completed', 'failed']);
export type RunState = z.infer<typeof RunStateSchema>;

/**
 * What the stages and the learner run with, resolved once by the run-starter (shared/config/resolve.ts): `run`, the
 * config of groups of no curriculum stage (validation, a run without stages), and each curriculum stage's complete
 * config (the run config with the stage's overrides merged), each with its tool entries in toolrl's names and its
 * `tools.config_file` inlined into `tools.tools` (relative code paths then relative to the config's folder).
 */
export const ResolvedRunSchema = z.object({
  run: RunConfigSchema,
  stages: z.record(z.string(), RunConfigSchema),
});
export type ResolvedRun = z.infer<typeof ResolvedRunSchema>;

/**
 * Every dataset path in `config` is resolved to a blob key (`data.train`, `data.val`, `trainer.sft.data`); reward
 * code (`reward.modules`, Python reward `path`s) keeps the names written, and a stage loads it from the run's input
 * files by file name (RunResources.reward). `resolved` is what the stages look a stage's config up in.
 * @example {"schemaVersion": 1, "runId": "quickstart-20250101-120000", "status": "running", "reason": null,
 *   "createdAt": "2025-01-01T12:00:00.000Z", "updatedAt": "2025-01-01T12:00:01.000Z",
 *   "config": {"…": "RunConfig"}, "input": {"config": "runs/quickstart-20250101-120000/input/config.yaml",
 *   "train": ["runs/quickstart-20250101-120000/input/train.parquet"], "val": []},
 *   "totals": {"groupsPlanned": 96, "trainPrompts": 48, "valPrompts": 0, "epochs": 2},
 *   "learner": {"submittedAt": "2025-01-01T12:00:01.000Z", "jobId": "embedded"}, "completedAt": null}
 */
export const RunStatusSchema = z.object({
  schemaVersion: z.literal(1),
  runId: z.string().min(1),
  status: RunStateSchema,
  /** Why the run failed (names the file, field or row), or null. */
  reason: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  /** The resolved run config; null only when the config itself could not be read or validated. */
  config: RunConfigSchema.nullable(),
  /** The config of each curriculum stage (and of the run's other groups), as the stages and the learner read it. */
  resolved: ResolvedRunSchema.optional(),
  input: z.object({
    config: z.string(),
    train: z.array(z.string()),
    val: z.array(z.string()),
    /**
     * Embedded runs only: the local folder of the original config file. Tool configs and reward modules are
     * resolved against it (they may name further local files); remote runs resolve them in the input prefix.
     */
    sourceDir: z.string().optional(),
  }),
  totals: z.object({
    /** Train groups the feeder will issue over all stages and epochs (the learner stops when it has seen them). */
    groupsPlanned: z.number().int().nonnegative().nullable(),
    trainPrompts: z.number().int().nonnegative(),
    valPrompts: z.number().int().nonnegative(),
    epochs: z.number().int().nonnegative(),
  }),
  learner: z
    .object({ submittedAt: z.string().nullable(), jobId: z.string().nullable() })
    .default({ submittedAt: null, jobId: null }),
  completedAt: z.string().nullable().default(null),
});
export type RunStatus = z.infer<typeof RunStatusSchema>;
