// Validation: which policy versions get validation groups, the per-version summary written once all of its
// groups are scored (with verl-style `val/...` metrics, overall and per data source), and the run's
// completion (the learner is done and its final version is evaluated).
import { z } from 'zod';
import type { StageContext } from '#shared/ports/stage-context';
import type { RewardConfig } from '#shared/schemas/config/reward';
import type { LearnerState } from '#shared/schemas/learner-stdio';
import { LearnerStateSchema } from '#shared/schemas/learner-stdio';
import { valGroupIdPrefix } from '#shared/schemas/messages/group-ref';
import type { RunStatus } from '#shared/schemas/run-status';
import { type ScoredGroup, ScoredGroupSchema } from '#shared/schemas/scored-group';
import { keys, parseKey } from '#shared/topology';
import { getJson, putJsonIfAbsent, readJson } from './blob-json.ts';
import { BoundedSet, Coalescer } from './coalesce.ts';
import { readRunStatus, transitionRun } from './run-status.ts';

/**
 * For rewards that declare no accuracy component (user modules, which this stage does not load): their first
 * component with one of these names is read as accuracy. Built-in rewards declare theirs (RewardDefinition.accuracy).
 */
export const FALLBACK_ACCURACY_COMPONENTS = [
  'accuracy',
  'correct',
  'success',
  'exact_match',
  'answer_correct',
];

/** A reward's declared accuracy component: a name, null when it declares none, undefined when the reward is unknown. */
export type DeclaredAccuracy = (reward: string) => string | null | undefined;

/**
 * The reward component read as `val/accuracy`, named as the run logs it (`<reward>/<component>`). The first reward
 * (in config order) with a non-zero weight that declares one wins: what the run optimises defines "solved". Only
 * when none does, a weight-0 reward listed to be watched (`exact_match` at weight 0 next to `format`) is used.
 * Rewards this stage cannot look up fall back to FALLBACK_ACCURACY_COMPONENTS among the `observed` components.
 */
export function accuracyComponentOf(
  reward: Pick<RewardConfig, 'functions'>,
  declared: DeclaredAccuracy,
  observed: readonly string[] = [],
): string | null {
  const ordered = [
    ...reward.functions.filter((f) => f.weight !== 0),
    ...reward.functions.filter((f) => f.weight === 0),
  ];
  for (const f of ordered) {
    const own = declared(f.name);
    if (own) return `${f.name}/${own}`;
  }
  for (const f of ordered) {
    if (declared(f.name) !== undefined) continue; // a known reward that scores form, not outcome
    const hit = FALLBACK_ACCURACY_COMPONENTS.find((c) => observed.includes(`${f.name}/${c}`));
    if (hit) return `${f.name}/${hit}`;
  }
  return null;
}

/** DeclaredAccuracy over the built-in rewards (loaded on first use: only the reward stage summarises). */
async function builtinAccuracy(): Promise<DeclaredAccuracy> {
  await import('#shared/bfcl/register-reward'); // BFCL's reward (and its accuracy) joins the built-ins
  const { BUILTIN_REWARDS } = await import('#shared/rewards/registry');
  const byName = new Map(BUILTIN_REWARDS.map((d) => [d.name, d.accuracy ?? null]));
  return (name) => byName.get(name);
}

/**
 * Tool errors that mean the model wrote an invalid call (no such tool, arguments its schema rejects). Calls
 * that were well-formed but failed to run (timeouts, limits, execution errors) count as valid.
 */
const INVALID_CALL_ERRORS = new Set(['unknown_tool', 'invalid_arguments', 'parse_error']);

/**
 * `runs/<runId>/metrics/eval/v<N>.json`.
 * @example {"schemaVersion": 1, "runId": "r", "policyVersion": 0, "prompts": 32, "trajectories": 32,
 *   "rewardMean": 0.41, "rewardStd": 0.3, "accuracy": 0.25, "accuracyComponent": "retool/correct",
 *   "components": {"retool": -0.5, "retool/correct": 0.25}, "toolCallsPerTrajectory": 0.9,
 *   "finishReasons": {"eos": 30, "max_turns": 2}, "metrics": {"val/reward_mean": 0.41, "val/accuracy": 0.25,
 *   "val/tool_call_validity": 0.95, "val/gsm8k/reward_mean": 0.41, "val/gsm8k/accuracy": 0.25,
 *   "val/gsm8k/tool_call_validity": 0.95}, "createdAt": "2025-01-01T00:00:00.000Z"}
 */
export const EvalSummarySchema = z.object({
  schemaVersion: z.literal(1),
  runId: z.string(),
  policyVersion: z.number().int().nonnegative(),
  prompts: z.number().int().nonnegative(),
  /** Validation prompts whose group was dead-lettered (recorded, not scored); absent before it existed. */
  droppedPrompts: z.number().int().nonnegative().default(0),
  trajectories: z.number().int().nonnegative(),
  rewardMean: z.number(),
  rewardStd: z.number(),
  /** Mean of the accuracy component (accuracyComponentOf) over trajectories; null if the reward has none. */
  accuracy: z.number().nullable(),
  accuracyComponent: z.string().nullable(),
  /** Samples per prompt (k of mean@k and pass@k): `rollout.val_kwargs.n`, or `toolrl eval --n`. */
  samplesPerPrompt: z.number().int().positive().optional(),
  /** Prompts with at least one sample whose accuracy component is 1, over prompts (pass@k); null without accuracy. */
  passAtK: z.number().nullable().optional(),
  /** Valid calls / attempted calls (toolCallValidity); null when no call was attempted. */
  toolCallValidity: z.number().nullable().optional(),
  components: z.record(z.string(), z.number()),
  toolCallsPerTrajectory: z.number(),
  finishReasons: z.record(z.string(), z.number()),
  /**
   * Flat metric names as verl logs them: `val/reward_mean`, `val/accuracy`, `val/tool_call_validity`, and the
   * same per data source (`val/<data_source>/reward_mean`, ...). Accuracy is null when the reward has no
   * accuracy component; validity (valid calls / attempted calls, malformed ones included) when no call was
   * attempted. Absent in summaries written before it existed.
   */
  metrics: z.record(z.string(), z.number().nullable()).default({}),
  createdAt: z.string(),
});
export type EvalSummary = z.infer<typeof EvalSummarySchema>;

const evalEnabled = (run: RunStatus): boolean =>
  (run.config?.trainer.eval_every ?? 0) > 0 && run.totals.valPrompts > 0;

/**
 * Versions that should have validation groups now: every `eval_every`-th up to the latest, and the learner's
 * final one. Multiples after the last one evaluated are all listed, so a version the learner published
 * between two feeder passes is still evaluated (its bundle stays under policy/v<N>/).
 */
export function wantedEvalVersions(
  run: RunStatus,
  latest: number,
  learner: LearnerState | undefined,
  evaluated: readonly number[] = [],
): number[] {
  if (!evalEnabled(run)) return [];
  const every = run.config!.trainer.eval_every;
  const done = new Set(evaluated);
  const out: number[] = [];
  const lastMultiple = evaluated.reduce((m, v) => (v % every === 0 ? Math.max(m, v) : m), -1);
  // Before any (a first pass, which normally sees v0) only the latest counts: no backfill from v0.
  const from =
    lastMultiple >= 0 ? lastMultiple + every : latest % every === 0 ? latest : Number.POSITIVE_INFINITY;
  for (let v = from; v <= latest; v += every) if (!done.has(v)) out.push(v);
  if (learner?.done && !done.has(learner.policyVersion) && !out.includes(learner.policyVersion))
    out.push(learner.policyVersion);
  return out;
}

export const evalGroupPrefix = (runId: string, version: number): string =>
  keys.groups(runId) + valGroupIdPrefix(version);

/** Summaries being worked out in this process, by store and version: callers that ask while one runs share the next. */
const summaryRuns = new Coalescer<EvalSummary | undefined>();
/** Summaries this process knows are written. */
const summariesWritten = new BoundedSet(1024);

/**
 * Summarises a version's validation once all its groups are scored; written once (put-if-absent). The validation
 * groups that finish last often finish together: each caller shares a look that started after it asked, and only the
 * look that writes the summary returns it (so one caller goes on to complete the run).
 */
export function writeEvalSummaryIfComplete(
  ctx: StageContext,
  run: RunStatus,
  version: number,
): Promise<EvalSummary | undefined> {
  const id = `${ctx.blobs.describe}\u0000${keys.evalSummary(run.runId, version)}`;
  return summaryRuns.run(id, async () => {
    if (summariesWritten.has(id)) return undefined;
    const summary = await summariseIfComplete(ctx, run, version);
    if (summary) summariesWritten.add(id);
    return summary;
  });
}

async function summariseIfComplete(
  ctx: StageContext,
  run: RunStatus,
  version: number,
): Promise<EvalSummary | undefined> {
  const manifests = await ctx.blobs.listKeys(evalGroupPrefix(run.runId, version));
  // A validation group that was dead-lettered never gets a manifest: it counts as done, and as dropped (looked up
  // only while manifests are missing).
  const scoredIds = new Set(manifests.map((k) => parseKey('group', k)?.groupId));
  const dropped =
    manifests.length >= run.totals.valPrompts
      ? new Set<string>()
      : new Set(
          (await ctx.blobs.listKeys(keys.deadLetters(run.runId) + valGroupIdPrefix(version)))
            .map((k) => parseKey('deadLetter', k)?.groupId)
            .filter((g): g is string => g !== undefined && !scoredIds.has(g)),
        );
  if (manifests.length + dropped.size < run.totals.valPrompts) return undefined;
  // Another process may have written it: one request rather than reading every manifest.
  if (await ctx.blobs.head(keys.evalSummary(run.runId, version))) return undefined;
  const groups: ScoredGroup[] = [];
  for (const key of manifests) {
    const g = await getJson(ctx.blobs, key, ScoredGroupSchema);
    if (g) groups.push(g);
  }
  // Validation groups run with the base config (stage null), so its reward says what accuracy is.
  const reward = run.config?.reward ?? { functions: [] };
  const observed = [
    ...new Set(groups.flatMap((g) => g.trajectories.flatMap((t) => Object.keys(t.rewardComponents)))),
  ];
  const accuracyComponent = accuracyComponentOf(reward, await builtinAccuracy(), observed);
  const summary = {
    ...summarise(run.runId, version, groups, ctx.now(), accuracyComponent),
    droppedPrompts: dropped.size,
  };
  const put = await putJsonIfAbsent(ctx.blobs, keys.evalSummary(run.runId, version), summary);
  if (!put.written) return undefined;
  ctx.log.info('validation summary', { ...summary });
  return summary;
}

export function summarise(
  runId: string,
  version: number,
  groups: readonly ScoredGroup[],
  now: Date,
  accuracyComponent: string | null,
): EvalSummary {
  const trajs = groups.flatMap((g) => g.trajectories);
  const n = Math.max(1, trajs.length);
  const rewards = trajs.map((t) => t.reward);
  const mean = rewards.reduce((a, b) => a + b, 0) / n;
  const std = Math.sqrt(rewards.reduce((a, b) => a + (b - mean) ** 2, 0) / n);
  const sums = new Map<string, number>();
  for (const t of trajs)
    for (const [k, v] of Object.entries(t.rewardComponents)) sums.set(k, (sums.get(k) ?? 0) + v);
  const components = Object.fromEntries([...sums].map(([k, v]) => [k, v / n]));
  const finishReasons: Record<string, number> = {};
  for (const t of trajs) finishReasons[t.finishReason] = (finishReasons[t.finishReason] ?? 0) + 1;
  const calls = trajs.reduce((a, t) => a + t.turns.reduce((b, turn) => b + turn.toolCalls.length, 0), 0);
  const solved = (t: Scored) =>
    accuracyComponent !== null && (t.rewardComponents[accuracyComponent] ?? 0) >= 1 - 1e-9;
  return {
    schemaVersion: 1,
    runId,
    policyVersion: version,
    prompts: groups.length,
    droppedPrompts: 0,
    trajectories: trajs.length,
    rewardMean: mean,
    rewardStd: std,
    accuracy: accuracyComponent ? (components[accuracyComponent] ?? 0) : null,
    accuracyComponent,
    samplesPerPrompt: Math.max(1, ...groups.map((g) => g.trajectories.length)),
    passAtK: accuracyComponent
      ? groups.filter((g) => g.trajectories.some(solved)).length / Math.max(1, groups.length)
      : null,
    toolCallValidity: toolCallValidity(trajs),
    components,
    toolCallsPerTrajectory: calls / n,
    finishReasons,
    metrics: valMetrics(groups, accuracyComponent),
    createdAt: now.toISOString(),
  };
}

type Scored = ScoredGroup['trajectories'][number];

/** `val/<name>` over all groups, then `val/<data_source>/<name>` per data source (sorted by name). */
export function valMetrics(
  groups: readonly ScoredGroup[],
  accuracyComponent: string | null,
): Record<string, number | null> {
  const bySource = new Map<string, Scored[]>();
  for (const g of groups)
    bySource.set(g.dataSource, [...(bySource.get(g.dataSource) ?? []), ...g.trajectories]);
  const out: Record<string, number | null> = {};
  const put = (prefix: string, trajs: readonly Scored[]) => {
    const n = Math.max(1, trajs.length);
    out[`${prefix}/reward_mean`] = trajs.reduce((a, t) => a + t.reward, 0) / n;
    out[`${prefix}/accuracy`] = accuracyComponent
      ? trajs.reduce((a, t) => a + (t.rewardComponents[accuracyComponent] ?? 0), 0) / n
      : null;
    out[`${prefix}/tool_call_validity`] = toolCallValidity(trajs);
  };
  put(
    'val',
    groups.flatMap((g) => g.trajectories),
  );
  for (const source of [...bySource.keys()].sort()) put(`val/${source}`, bySource.get(source)!);
  return out;
}

/** Valid calls / attempted calls (parsed calls plus malformed ones); null when no call was attempted. */
export function toolCallValidity(trajs: readonly Scored[]): number | null {
  let attempted = 0;
  let valid = 0;
  for (const t of trajs)
    for (const turn of t.turns) {
      attempted += turn.toolCalls.length + turn.parseErrors.length;
      valid += turn.toolCalls.filter((c) => !INVALID_CALL_ERRORS.has(c.result.error?.type ?? '')).length;
    }
  return attempted === 0 ? null : valid / attempted;
}

/** The versions the feeder gave validation groups (its state file; stages/feeder.ts owns the full schema). */
const IssuedEvalsSchema = z.object({ evalVersions: z.array(z.number().int().nonnegative()) }).loose();

/**
 * Fails the run when the learner says it stopped it (state.json `failed`). Otherwise completes the run once the
 * learner is done and (with validation) its final version and every version that got validation groups are
 * evaluated: an earlier version's groups may still be in flight when the final one's
 * summary lands (both issued in one feeder pass), and completing then would drop that summary.
 */
export async function maybeCompleteRun(
  ctx: StageContext,
  runId: string,
  learner?: LearnerState,
): Promise<boolean> {
  const state = learner ?? (await readJson(ctx.blobs, keys.learnerState(runId), LearnerStateSchema))?.value;
  if (!state?.done) return false;
  const run = await readRunStatus(ctx.blobs, runId);
  if (!run || run.status === 'completed' || run.status === 'failed') return false;
  if (state.failed !== undefined) {
    // The learner stopped a run that cannot learn (nothing trained for max_num_gen_batches batches, or at all).
    await transitionRun(ctx.blobs, runId, 'failed', ctx.now(), () => ({ reason: state.failed ?? null }));
    ctx.log.error('run failed: the learner stopped it', { runId, reason: state.failed });
    return false;
  }
  if (evalEnabled(run)) {
    const issued = (await readJson(ctx.blobs, keys.feederState(runId), IssuedEvalsSchema))?.value
      .evalVersions;
    for (const v of new Set([...(issued ?? []), state.policyVersion]))
      if (!(await ctx.blobs.head(keys.evalSummary(runId, v)))) return false;
  }
  const after = await transitionRun(ctx.blobs, runId, 'completed', ctx.now());
  if (after?.status === 'completed') ctx.log.info('run completed', { runId, step: state.step });
  return after?.status === 'completed';
}
