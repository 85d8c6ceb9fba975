// The feeder stage: on each learner progress event (a new policy version, a committed step) it tops up the
// rollout queue so at most `batch_prompts x (1 + max_staleness)` train groups are in flight, walking the
// curriculum stages and epochs; schedules validation groups every `eval_every` versions and for the final
// one (one greedy sample per prompt, as verl validates with do_sample off); and marks the run complete when
// the learner is done. Each train group takes its curriculum stage's resolved config (group size, sampling seed,
// in-flight cap, prompt template); validation groups take the run's.
import { z } from 'zod';
import type { PromptTemplate } from '#shared/data/prompts/templates';
import { readJson, updateJson } from '#shared/pipeline/blob-json';
import { sendTo } from '#shared/pipeline/context';
import { maybeCompleteRun, wantedEvalVersions } from '#shared/pipeline/eval';
import { groupAt, groupSeed, planStages } from '#shared/pipeline/plan';
import { applyRunTemplate, PromptTypeError, runPromptTemplate } from '#shared/pipeline/prompt-type';
import { type RunResources, stageConfigOf } from '#shared/pipeline/run-resources';
import { readRunStatus, transitionRun } from '#shared/pipeline/run-status';
import type { StageContext } from '#shared/ports/stage-context';
import type { RunConfig } from '#shared/schemas/config/run';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { type LearnerState, LearnerStateSchema } from '#shared/schemas/learner-stdio';
import { type GroupRef, valIds } from '#shared/schemas/messages/group-ref';
import { type PolicyEvent, parsePolicyEventKey } from '#shared/schemas/messages/policy-event';
import type { RolloutStart } from '#shared/schemas/messages/rollout-request';
import { notifiedKeys } from '#shared/schemas/messages/s3-event';
import { PolicyPointerSchema } from '#shared/schemas/policy';
import type { RunStatus } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';

/**
 * `runs/<runId>/feeder/state.json`: how far the walk has been issued, and which versions got validation groups.
 * @example {"schemaVersion": 1, "issued": 24, "evalVersions": [0, 5], "updatedAt": "2025-01-01T00:00:00.000Z"}
 */
export const FeederStateSchema = z.object({
  schemaVersion: z.literal(1),
  issued: z.number().int().nonnegative(),
  evalVersions: z.array(z.number().int().nonnegative()),
  updatedAt: z.string(),
});
export type FeederState = z.infer<typeof FeederStateSchema>;

export interface FeederContext extends StageContext {
  readonly resources: RunResources;
}

export async function handlePolicyEvent(ctx: FeederContext, event: PolicyEvent): Promise<void> {
  const runs = new Set<string>();
  for (const { key } of notifiedKeys(event)) {
    const parsed = parsePolicyEventKey(key);
    if (parsed) runs.add(parsed.runId);
    else ctx.log.info('ignored: not a learner progress key', { key });
  }
  for (const runId of runs) await feedRun(ctx, runId);
}

/** One feeder pass over a run; safe to repeat (a lost race re-sends groups, which later stages dedupe). */
export async function feedRun(ctx: FeederContext, runId: string): Promise<void> {
  // The three reads at once: on S3 each is a request on the way from a learner step to the next rollouts.
  const [run, pointer, learnerState] = await Promise.all([
    readRunStatus(ctx.blobs, runId),
    readJson(ctx.blobs, keys.policyLatest(runId), PolicyPointerSchema),
    readJson(ctx.blobs, keys.learnerState(runId), LearnerStateSchema),
  ]);
  if (!run?.config || (run.status !== 'running' && run.status !== 'starting')) {
    ctx.log.info('run is not running; nothing to feed', { runId, status: run?.status });
    return;
  }
  const latest = pointer?.value;
  if (!latest) {
    ctx.log.info('no policy published yet', { runId });
    return;
  }
  // A chat template that drops tool schemas or results cannot train tool use: refuse the run before any rollout.
  const refusal = await ctx.resources.chatTemplateRefusal(runId);
  if (refusal) {
    await transitionRun(ctx.blobs, runId, 'failed', ctx.now(), () => ({ reason: refusal }));
    ctx.log.error('run failed: its chat template drops tool use', { runId, reason: refusal });
    return;
  }
  const learner = learnerState?.value;
  if (learner?.done && learner.failed !== undefined) {
    // The learner stopped a run that cannot learn: fail it with its reason; nothing more to sample or validate.
    await maybeCompleteRun(ctx, runId, learner);
    return;
  }
  const config = run.config;
  const rowCounts = new Map<string, number>();
  for (const s of planStages(config, () => 0))
    for (const k of s.trainKeys) rowCounts.set(k, (await ctx.resources.rows(k)).length);
  const plan = planStages(config, (k) => rowCounts.get(k) ?? 0);
  const planned = trainGroupsToIssue(config, run.totals.groupsPlanned ?? 0, learner);
  const consumed = (learner?.groupsConsumed ?? 0) + (learner?.groupsDropped ?? 0);
  const resolved = await ctx.resources.resolved(runId);
  const stages = { get: (stage: string | null) => stageConfigOf(resolved, stage) };
  const prompts = new PromptTemplates(ctx.resources, runId);

  for (let attempt = 0; attempt < 10; attempt++) {
    const current = await readJson(ctx.blobs, keys.feederState(runId), FeederStateSchema);
    const st = current?.value ?? { schemaVersion: 1 as const, issued: 0, evalVersions: [], updatedAt: '' };
    const inFlight = st.issued - consumed;
    // The cap of the stage the next group belongs to: a stage with a larger batch_prompts needs more in flight.
    const nextStage = groupAt(plan, st.issued, { seed: config.trainer.seed })?.stage.name ?? null;
    const { trainer } = stages.get(nextStage);
    const cap = trainer.batch_prompts * (1 + trainer.max_staleness);
    const n = learner?.done ? 0 : Math.max(0, Math.min(cap - inFlight, planned - st.issued));
    const newEval = wantedEvalVersions(run, latest.version, learner, st.evalVersions);
    if (n === 0 && newEval.length === 0) break;

    const messages: RolloutStart[] = [];
    try {
      for (let p = st.issued; p < st.issued + n; p++) {
        const slot = groupAt(plan, p, { seed: config.trainer.seed });
        if (!slot) break;
        // Deterministic runs sample each batch with a fixed version; a batch whose version is not out yet waits.
        const pinned = config.trainer.deterministic
          ? pinnedVersion(config, p, learner, latest.version)
          : null;
        if (pinned === undefined) break;
        const at = await rowAt(ctx.resources, slot.stage.trainKeys, slot.row);
        const template = await prompts.get(slot.stage.promptType);
        const row = template ? applyRunTemplate(at.row, template, at.where) : at.row;
        messages.push(
          startMessage(run, stages.get(slot.stage.name), latest.version, row, {
            groupId: slot.groupId,
            promptId: slot.promptId,
            epoch: slot.epoch,
            stage: slot.stage.name,
            split: 'train',
            policyVersion: pinned,
            position: p,
          }),
        );
      }
      const valTemplate = await prompts.get(config.data.prompt_type);
      for (const v of newEval) messages.push(...(await evalMessages(ctx.resources, run, v, valTemplate)));
    } catch (err) {
      if (!(err instanceof PromptTypeError)) throw err;
      // Every later pass would fail the same way: end the run with the reason rather than stall it.
      const after = await transitionRun(ctx.blobs, runId, 'failed', ctx.now(), () => ({
        reason: err.message,
      }));
      ctx.log.error('run failed: its prompt template cannot be applied', { runId, reason: err.message });
      if (after?.status === 'failed') return;
      throw err;
    }
    // A deterministic batch whose version is not out yet sends nothing: nothing to record either (a write here was a
    // request on the way to the pass that does feed, as state.json and LATEST.json each wake the feeder).
    if (messages.length === 0) break;
    // Send before recording: a crash in between re-sends the same groups, which the stages deduplicate.
    await sendTo(ctx, 'rollout', runId, messages);
    const next: FeederState = {
      schemaVersion: 1,
      issued: st.issued + messages.filter((m) => m.group.split === 'train').length,
      evalVersions: [...st.evalVersions, ...newEval].sort((a, b) => a - b),
      updatedAt: ctx.now().toISOString(),
    };
    const stored = await updateJson(ctx.blobs, keys.feederState(runId), FeederStateSchema, (cur) =>
      (cur?.updatedAt ?? '') === st.updatedAt && (cur?.issued ?? 0) === st.issued ? next : undefined,
    );
    if (stored === next) {
      ctx.log.info('fed', {
        runId,
        version: latest.version,
        groups: n,
        evalVersions: newEval,
        inFlight: inFlight + n,
      });
      break;
    }
    ctx.log.info('another feeder moved first; re-reading', { runId });
  }
  if (learner?.done) await maybeCompleteRun(ctx, runId, learner);
}

/**
 * How many train groups of the walk to issue: all `planned`, except in a deterministic run with `max_steps`, where
 * batch t is exactly positions [t b, (t+1) b) and the learner stops after max_steps steps: only the batches it will
 * still settle, those settled so far plus one for each step still to take (a batch whose groups were all dropped
 * settles without a step, so each one lets one more batch in). Groups past that would be sampled, scored and paid
 * for, never trained, and would hold the rollout workers while the final validation waits behind them. Elsewhere
 * a dropped or refused group does not keep its batch's place, so how many the learner needs is not known ahead.
 */
export function trainGroupsToIssue(
  config: RunConfig,
  planned: number,
  learner: LearnerState | undefined,
): number {
  const { deterministic, max_steps: maxSteps, batch_prompts: b } = config.trainer;
  if (!deterministic || maxSteps === undefined) return planned;
  const settled = learner?.batches?.settled ?? 0;
  const step = learner?.step ?? 0;
  return Math.min(planned, (settled + Math.max(0, maxSteps - step)) * b);
}

/**
 * The version that samples train group `position` in a deterministic run: the policy after batch t - max_staleness
 * was settled (batch t = position / batch_prompts; every stage has the run's batch_prompts and max_staleness, see
 * checkDeterministic), or undefined while the learner has not got there. Before any learner state exists, only
 * the first batches (those sampled by the first published version) can be issued.
 */
export function pinnedVersion(
  config: RunConfig,
  position: number,
  learner: LearnerState | undefined,
  latest: number,
): number | undefined {
  const { batch_prompts: b, max_staleness: s } = config.trainer;
  const after = Math.max(0, Math.floor(position / b) - s);
  const batches = learner?.batches;
  if (!batches) return after === 0 && !learner?.step ? latest : undefined;
  if (after > batches.settled) return undefined;
  const first = batches.settled - batches.versions.length + 1;
  if (after < first)
    throw new Error(
      `deterministic run: the version after batch ${after} is no longer in learner/state.json (it keeps batches ${first}-${batches.settled})`,
    );
  return batches.versions[after - first];
}

/** The run's prompt templates by `prompt_type`, loaded once per pass against the run's base folder. */
class PromptTemplates {
  private readonly byType = new Map<string, PromptTemplate>();
  constructor(
    private readonly resources: RunResources,
    private readonly runId: string,
  ) {}
  async get(promptType: string | undefined): Promise<PromptTemplate | undefined> {
    if (promptType === undefined) return undefined;
    const hit = this.byType.get(promptType);
    if (hit) return hit;
    const template = runPromptTemplate(promptType, await this.resources.baseDir(this.runId));
    this.byType.set(promptType, template);
    return template;
  }
}

async function rowAt(
  resources: RunResources,
  keysOfStage: readonly string[],
  index: number,
): Promise<{ row: DatasetRow; where: string }> {
  let i = index;
  for (const k of keysOfStage) {
    const rows = await resources.rows(k);
    if (i < rows.length) return { row: rows[i]!, where: `row ${i} of ${k}` };
    i -= rows.length;
  }
  throw new Error(`row ${index} is past the end of ${keysOfStage.join(', ')}`);
}

/** `config` is the group's own: its curriculum stage's resolved config for a train group, the run's for validation. */
function startMessage(
  run: RunStatus,
  config: RunConfig,
  version: number,
  row: DatasetRow,
  ids: Pick<GroupRef, 'groupId' | 'promptId' | 'epoch' | 'stage' | 'split' | 'policyVersion' | 'position'>,
): RolloutStart {
  return {
    schemaVersion: 1,
    kind: 'start',
    // Validation samples rollout.val_kwargs.n per prompt (one by default: greedy decoding gives one answer).
    group: {
      runId: run.runId,
      ...ids,
      dataSource: row.data_source,
      groupSize: ids.split === 'val' ? config.rollout.val_kwargs.n : config.rollout.n,
    },
    row: row as unknown as Record<string, unknown>,
    seed: groupSeed(config.rollout.seed, ids.groupId),
    issuedAtVersion: version,
  };
}

async function evalMessages(
  resources: RunResources,
  run: RunStatus,
  version: number,
  template: PromptTemplate | undefined,
): Promise<RolloutStart[]> {
  const rows: { row: DatasetRow; where: string }[] = [];
  for (const k of run.input.val)
    for (const [i, row] of (await resources.rows(k)).entries()) rows.push({ row, where: `row ${i} of ${k}` });
  return validationStarts(run, version, rows, template);
}

/**
 * The validation groups of one policy version: one per row, `rollout.val_kwargs.n` samples each, pinned to the
 * version, seeded by group id. Shared by the feeder and `toolrl eval`, so both sample the same way.
 */
export function validationStarts(
  run: RunStatus,
  version: number,
  rows: readonly { row: DatasetRow; where: string }[],
  template: PromptTemplate | undefined,
): RolloutStart[] {
  return rows.map(({ row, where }, index) =>
    startMessage(run, run.config!, version, template ? applyRunTemplate(row, template, where) : row, {
      ...valIds(version, index),
      epoch: 0,
      stage: null,
      split: 'val',
      policyVersion: version,
      position: null,
    }),
  );
}

export type { LearnerState };
