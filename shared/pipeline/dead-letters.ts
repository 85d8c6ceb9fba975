// A dead-lettered message of a group becomes a recorded drop: a record under the run's `dead-letters/` prefix,
// which the learner counts (it stops waiting for the group) and the stage that writes it holds against the run's
// limit. Without it one message in a dead-letter queue left its group, and so the run, waiting forever.
import { z } from 'zod';
import type { BlobStore } from '#shared/ports/blob-store';
import type { StageContext } from '#shared/ports/stage-context';
import {
  type DeadLetterRecord,
  DeadLetterRecordSchema,
  type DeadLetterStage,
} from '#shared/schemas/dead-letter';
import { type GroupRef, GroupRefSchema } from '#shared/schemas/messages/group-ref';
import type { RunStatus } from '#shared/schemas/run-status';
import { keys, parseKey } from '#shared/topology';
import { getJson, putJsonIfAbsent } from './blob-json.ts';
import { maybeCompleteRun, writeEvalSummaryIfComplete } from './eval.ts';
import { readRunStatus, transitionRun } from './run-status.ts';

/** Which group (and sample) a message is about: the group ref every rollout-side message carries. */
export interface GroupOfMessage {
  readonly group: GroupRef;
  readonly sampleIndex: number | null;
}

const Carrier = z.union([
  z.object({ trajectory: z.object({ group: GroupRefSchema, sampleIndex: z.number().int().nonnegative() }) }),
  z.object({ group: GroupRefSchema }),
]);

/**
 * The group a payload belongs to, read loosely: a message that failed its own schema may still name its group
 * (then its drop is recorded too); undefined when it names none (pure poison, which only the DLQ keeps).
 */
export function groupOfPayload(payload: unknown): GroupOfMessage | undefined {
  const c = Carrier.safeParse(payload);
  if (!c.success) return undefined;
  return 'trajectory' in c.data
    ? { group: c.data.trajectory.group, sampleIndex: c.data.trajectory.sampleIndex }
    : { group: c.data.group, sampleIndex: null };
}

export interface DeadLetterEvent {
  readonly stage: DeadLetterStage;
  readonly of: GroupOfMessage;
  readonly messageId: string;
  readonly reason: string;
  readonly receiveCount: number;
}

/**
 * Records the drop (once per message: a redelivered dead-lettering finds it there), fails the run when that takes
 * it past its limit, and for a validation group lets the version's summary (and so the run) complete without it.
 */
export async function recordDeadLetter(ctx: StageContext, e: DeadLetterEvent): Promise<DeadLetterRecord> {
  const { group } = e.of;
  const record: DeadLetterRecord = {
    schemaVersion: 1,
    runId: group.runId,
    groupId: group.groupId,
    split: group.split,
    stage: e.stage,
    sampleIndex: e.of.sampleIndex,
    messageId: e.messageId,
    reason: e.reason,
    receiveCount: e.receiveCount,
    deadLetteredAt: ctx.now().toISOString(),
  };
  await putJsonIfAbsent(ctx.blobs, keys.deadLetter(group.runId, group.groupId, e.stage, e.messageId), record);
  const run = await readRunStatus(ctx.blobs, group.runId);
  if (!run || (run.status !== 'running' && run.status !== 'starting')) return record;
  if (group.split === 'train') await enforceDeadLetterLimit(ctx, run);
  else if (group.policyVersion !== null && (await writeEvalSummaryIfComplete(ctx, run, group.policyVersion)))
    await maybeCompleteRun(ctx, group.runId);
  return record;
}

/** Every dead-letter record of a run, in key order (group, then stage and message). */
export async function listDeadLetters(blobs: BlobStore, runId: string): Promise<DeadLetterRecord[]> {
  const out: DeadLetterRecord[] = [];
  for (const key of await blobs.listKeys(keys.deadLetters(runId))) {
    const r = await getJson(blobs, key, DeadLetterRecordSchema);
    if (r) out.push(r);
  }
  return out;
}

/** The group ids with at least one dead-lettered message under a prefix of group ids (`val-v3-`). */
export async function deadLetteredGroups(
  blobs: BlobStore,
  runId: string,
  groupPrefix = '',
): Promise<Set<string>> {
  const ids = (await blobs.listKeys(keys.deadLetters(runId) + groupPrefix)).map(
    (k) => parseKey('deadLetter', k)?.groupId,
  );
  return new Set(ids.filter((g) => g !== undefined));
}

export interface DeadLetterSummary {
  /** Distinct groups with a dead letter, by split. */
  readonly groups: { readonly train: number; readonly val: number };
  /** Per stage: messages, groups, and the reasons with how many messages gave each (most frequent first). */
  readonly stages: Readonly<
    Partial<
      Record<
        DeadLetterStage,
        { messages: number; groups: number; reasons: readonly { reason: string; count: number }[] }
      >
    >
  >;
}

export function summariseDeadLetters(records: readonly DeadLetterRecord[]): DeadLetterSummary {
  const train = new Set(records.filter((r) => r.split === 'train').map((r) => r.groupId));
  const val = new Set(records.filter((r) => r.split === 'val').map((r) => r.groupId));
  const stages: Record<
    string,
    { messages: number; groups: number; reasons: { reason: string; count: number }[] }
  > = {};
  for (const stage of new Set(records.map((r) => r.stage))) {
    const of = records.filter((r) => r.stage === stage);
    const counts = new Map<string, number>();
    for (const r of of) counts.set(r.reason, (counts.get(r.reason) ?? 0) + 1);
    stages[stage] = {
      messages: of.length,
      groups: new Set(of.map((r) => r.groupId)).size,
      reasons: [...counts].map(([reason, count]) => ({ reason, count })).sort((a, b) => b.count - a.count),
    };
  }
  return { groups: { train: train.size, val: val.size }, stages };
}

/** One line per stage: `reward: 4 messages of 1 group: Error: boom (after 5 attempts) (x4)`. */
export function describeDeadLetters(s: DeadLetterSummary, maxReasons = 3): string[] {
  return Object.entries(s.stages).map(([stage, v]) => {
    const reasons = v.reasons
      .slice(0, maxReasons)
      .map((r) => `${r.reason.split('\n')[0]!.slice(0, 300)}${r.count > 1 ? ` (x${r.count})` : ''}`);
    const more = v.reasons.length > maxReasons ? `; and ${v.reasons.length - maxReasons} more reasons` : '';
    return `${stage}: ${v.messages} message${v.messages === 1 ? '' : 's'} of ${v.groups} group${
      v.groups === 1 ? '' : 's'
    }: ${reasons.join('; ')}${more}`;
  });
}

/**
 * Fails the run, with the reasons, once more than `trainer.max_dead_letter_fraction` of its planned train groups
 * have a dead letter; returns whether the run is (now) failed for it.
 */
export async function enforceDeadLetterLimit(ctx: StageContext, run: RunStatus): Promise<boolean> {
  const planned = run.totals.groupsPlanned;
  const fraction = run.config?.trainer.max_dead_letter_fraction;
  if (!planned || fraction === undefined) return false;
  const limit = Math.floor(fraction * planned);
  // Counting folders is one listing; records are read only when the limit is passed.
  const records = await listDeadLettersIfOver(ctx.blobs, run.runId, limit);
  if (!records) return false;
  const summary = summariseDeadLetters(records);
  const reason =
    `${summary.groups.train} of ${planned} planned groups were dead-lettered, more than ` +
    `trainer.max_dead_letter_fraction = ${fraction} allows (${limit}):\n${describeDeadLetters(summary).join('\n')}\n` +
    `(one record per message under ${keys.deadLetters(run.runId)}; fix the cause and submit the run again)`;
  const after = await transitionRun(ctx.blobs, run.runId, 'failed', ctx.now(), () => ({ reason }));
  if (after?.status === 'failed' && after.reason === reason)
    ctx.log.error('run failed: too many dead-lettered groups', { runId: run.runId, reason });
  return after?.status === 'failed';
}

async function listDeadLettersIfOver(
  blobs: BlobStore,
  runId: string,
  limit: number,
): Promise<DeadLetterRecord[] | undefined> {
  const keysOf = await blobs.listKeys(keys.deadLetters(runId));
  if (keysOf.length <= limit) return undefined; // fewer messages than the limit: fewer groups too
  const records = await listDeadLetters(blobs, runId);
  const train = new Set(records.filter((r) => r.split === 'train').map((r) => r.groupId));
  return train.size > limit ? records : undefined;
}
