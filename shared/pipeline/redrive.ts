// `toolrl redrive`: after a fix, a run's dead-lettered messages go back to the queues they came from, and their
// dead-letter records move to `redriven/`, so the run's dropped count no longer holds them (the learner trains
// each group that now completes). Written against the queue port, so SQS and the embedded queues share it.
import type { BlobStore } from '#shared/ports/blob-store';
import type { Queue, ReceivedMessage } from '#shared/ports/queue';
import type { QueueSet } from '#shared/ports/queue-set';
import {
  type DeadLetterRecord,
  type DeadLetterStage,
  DeadLetterStageSchema,
  type RedrivenRecord,
} from '#shared/schemas/dead-letter';
import { ClaimCheckEnvelopeSchema } from '#shared/schemas/messages/claim-check';
import { consumedQueue, keys, type QueueName } from '#shared/topology';
import { putJson } from './blob-json.ts';
import { decodeMessage } from './claim-check.ts';
import { groupOfPayload, listDeadLetters } from './dead-letters.ts';
import { readRunStatus } from './run-status.ts';

/** The stages whose dead letters name a group, and so can be redriven (the run events' and feeder's cannot). */
export const REDRIVE_STAGES = DeadLetterStageSchema.options;

/** The queue each stage consumes: its dead-letter queue is where its dead letters wait, and where they go back. */
export const STAGE_QUEUES: Readonly<Record<DeadLetterStage, QueueName>> = {
  rollout: consumedQueue('rollout'),
  'tool-call': consumedQueue('tool-call'),
  reward: consumedQueue('reward'),
  learner: 'scored-groups',
};

/** The run cannot be redriven (unknown, or ended: nothing would train its groups any more). */
export class RedriveError extends Error {
  override name = 'RedriveError';
}

export interface RedriveResult {
  readonly runId: string;
  /** Messages sent back, by stage (only stages with dead letters of the run appear). */
  readonly moved: Partial<Record<DeadLetterStage, number>>;
  /** Dead-letter records moved to `redriven/` (their groups may now complete and be trained). */
  readonly recordsRedriven: number;
  /** Records left as drops: no message of their group was in the queue (past its retention, or moved already). */
  readonly recordsWithoutMessage: number;
}

export interface RedriveOptions {
  /** Only these stages' dead letters (default: all). */
  readonly stages?: readonly DeadLetterStage[];
  /** Long poll of each scan receive; SQS needs one (a short poll samples some servers only). */
  readonly waitTimeSec?: number;
  readonly now?: () => Date;
}

/** Which run and group a dead-lettered body is about (following a claim check); undefined for pure poison. */
async function ownerOf(
  blobs: BlobStore,
  body: string,
): Promise<{ runId: string; groupId: string | undefined } | undefined> {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  const claim = ClaimCheckEnvelopeSchema.safeParse(json);
  if (claim.success) {
    const runId = /^runs\/([^/]+)\//.exec(claim.data.claimCheck.key)?.[1];
    if (!runId) return undefined;
    const payload = await decodeMessage(blobs, body).catch(() => undefined);
    return { runId, groupId: groupIdOf(payload) };
  }
  const of = groupOfPayload(json);
  if (of) return { runId: of.group.runId, groupId: of.group.groupId };
  const scored = json as { runId?: unknown; groupId?: unknown } | null; // a scored-group message
  if (typeof scored?.runId !== 'string') return undefined;
  return { runId: scored.runId, groupId: typeof scored.groupId === 'string' ? scored.groupId : undefined };
}

function groupIdOf(payload: unknown): string | undefined {
  const of = groupOfPayload(payload);
  if (of) return of.group.groupId;
  const g = (payload as { groupId?: unknown } | null)?.groupId;
  return typeof g === 'string' ? g : undefined;
}

/**
 * Every message of the run in a dead-letter queue, received and kept hidden; the others are hidden only while the
 * queue is scanned (so none is read twice) and made visible again at the end, untouched.
 */
async function scan(
  blobs: BlobStore,
  dlq: Queue,
  runId: string,
  waitTimeSec: number,
): Promise<{ message: ReceivedMessage; groupId: string | undefined }[]> {
  const mine: { message: ReceivedMessage; groupId: string | undefined }[] = [];
  const others: ReceivedMessage[] = [];
  try {
    for (let empty = 0; empty < 2; ) {
      const got = await dlq.receive({ maxMessages: 10, waitTimeSec, visibilityTimeoutSec: 300 });
      if (got.length === 0) empty++;
      for (const m of got) {
        const owner = await ownerOf(blobs, m.body);
        if (owner?.runId === runId) mine.push({ message: m, groupId: owner.groupId });
        else others.push(m);
      }
    }
  } finally {
    for (const m of others) await dlq.changeVisibility(m.receiptHandle, 0).catch(() => {});
  }
  return mine;
}

/**
 * Sends the run's dead-lettered messages (of `stages`) back to their queues and moves the records of the groups
 * they belong to into `redriven/`. Refuses a run that has ended. Each message is sent before it is deleted (a
 * crash in between leaves a duplicate, which the stages deduplicate by id), and a record moves only after its
 * group's messages went back (a crash before leaves the drop counted, never a group the run silently waits for).
 */
export async function redriveRun(
  blobs: BlobStore,
  queues: QueueSet,
  runId: string,
  opts: RedriveOptions = {},
): Promise<RedriveResult> {
  const run = await readRunStatus(blobs, runId);
  if (!run)
    throw new RedriveError(`there is no run ${runId} (no ${keys.runJson(runId)} in ${blobs.describe})`);
  if (run.status !== 'running' && run.status !== 'starting')
    throw new RedriveError(
      `run ${runId} is ${run.status}: nothing would train its groups any more (fix the cause and start it again)`,
    );
  const stages = opts.stages ?? REDRIVE_STAGES;
  const now = opts.now ?? (() => new Date());
  // Taken before anything moves: a message dead-lettered again after its redrive gets a new record, kept.
  const records = (await listDeadLetters(blobs, runId)).filter((r) => stages.includes(r.stage));
  const moved: Partial<Record<DeadLetterStage, number>> = {};
  const redrivenGroups = new Map<DeadLetterStage, Set<string>>();
  for (const stage of stages) {
    const name = STAGE_QUEUES[stage];
    const found = await scan(blobs, queues.dlqs[name], runId, opts.waitTimeSec ?? 1);
    if (found.length === 0 && !records.some((r) => r.stage === stage)) continue;
    if (found.length > 0) {
      // Without the dead-letter attributes: the stages read none, and a redriven message starts afresh.
      await queues.queues[name].sendBatch(found.map((f) => ({ body: f.message.body })));
      await queues.dlqs[name].deleteBatch(found.map((f) => f.message.receiptHandle));
    }
    moved[stage] = found.length;
    redrivenGroups.set(stage, new Set(found.flatMap((f) => (f.groupId ? [f.groupId] : []))));
  }
  let recordsRedriven = 0;
  for (const r of records) {
    if (!redrivenGroups.get(r.stage)?.has(r.groupId)) continue;
    await moveRecord(blobs, r, now());
    recordsRedriven++;
  }
  return { runId, moved, recordsRedriven, recordsWithoutMessage: records.length - recordsRedriven };
}

async function moveRecord(blobs: BlobStore, r: DeadLetterRecord, at: Date): Promise<void> {
  const kept: RedrivenRecord = { ...r, redrivenAt: at.toISOString() };
  await putJson(blobs, keys.redrivenRecord(r.runId, r.groupId, r.stage, r.messageId), kept);
  await blobs.delete(keys.deadLetter(r.runId, r.groupId, r.stage, r.messageId));
}

/** One line for the CLI: `run r-1: sent back reward 2; 2 dead-letter records moved to redriven/`. */
export function describeRedrive(r: RedriveResult): string {
  const moved = Object.entries(r.moved)
    .filter(([, n]) => n > 0)
    .map(([s, n]) => `${s} ${n}`);
  return (
    `run ${r.runId}: ${moved.length ? `sent back ${moved.join(', ')}` : 'no dead-lettered messages to send back'}; ` +
    `${r.recordsRedriven} dead-letter record${r.recordsRedriven === 1 ? '' : 's'} moved to redriven/` +
    (r.recordsWithoutMessage
      ? `; ${r.recordsWithoutMessage} left as drops (no message of their group was in the dead-letter queue)`
      : '')
  );
}
