// The shape of every queue handler: decode (claim check) and zod-parse each record, run the stage on it, and
// answer with a partial batch response (Powertools) so one bad record never fails its siblings. A permanent
// failure — or any failure on the last allowed receive — goes to the dead-letter queue with its reason, and a
// message that names its group is recorded as that group's drop (dead-letters.ts), so the run does not wait for it.
// A transient failure of a service call (a connection refused or reset, a timeout, throttling, a 5xx) is retried
// inside the record first; a record that still fails is given back to be retried after a short backoff, not after
// its queue's visibility timeout (sized for Lambda's timeout: 90 minutes for a rollout).
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type ZodType, z } from 'zod';
import { BadMessageError, describeError, isPermanent, isTransientServiceError } from '#shared/ports/errors';
import { ATTR } from '#shared/ports/queue';
import type { StageContext } from '#shared/ports/stage-context';
import { DeadLetterStageSchema } from '#shared/schemas/dead-letter';
import { decodeS3Key } from '#shared/schemas/messages/s3-event';
import { templatePattern } from '#shared/templates';
import { sleep } from '#shared/tools/limits';
import { KEY_TEMPLATES, type QueueName } from '#shared/topology';
import { decodeMessage } from './claim-check.ts';
import { groupOfPayload, recordDeadLetter } from './dead-letters.ts';

export interface RecordMeta {
  readonly messageId: string;
  readonly receiveCount: number;
  /** Milliseconds left in this invocation, on Lambda (its context's getRemainingTimeInMillis). */
  readonly remainingMs?: () => number;
}

export interface BatchHandlerSpec<T> {
  /** The function's name, for logs and dead-letter reasons. */
  readonly name: string;
  readonly schema: ZodType<T>;
  /** The queue's redrive maxReceiveCount: on that receive a failure is dead-lettered with its reason. */
  readonly maxReceiveCount: number;
  /** The queue it consumes: a record handled (or dead-lettered) counts against it in the run's tally. */
  readonly queue?: QueueName;
  readonly handle: (message: T, meta: RecordMeta) => Promise<void>;
}

export type SqsBatchHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

/**
 * Retries of a record inside its invocation when a service call fails transiently: the whole record again (every
 * stage is idempotent by id, as for a redelivery), after 0.5, 1, 2, 4 and 8 s (each with jitter down to half), so
 * an endpoint that is back within about 10 s costs a pause rather than a message given back. The SDK's own retries
 * (three attempts within a second, and none once a burst of failures has spent its retry quota) are inside each call.
 */
export const RECORD_RETRY = { attempts: 6, baseDelayMs: 500, maxDelayMs: 8_000 } as const;

/**
 * A record that still fails is made visible again after `baseSec` x 2^(receive - 1) seconds (60, 120, 240, 480),
 * never longer than its queue's visibility timeout, instead of waiting all of it. The four backoffs before the
 * last receive add up to 15 minutes, past the learner lease's 10-minute takeover (learner-lease.ts), so a run-starter
 * waiting on a lease whose holder died still gets there.
 */
export const GIVE_BACK = { baseSec: 60 } as const;

/** The backoff before a record's next receive (see GIVE_BACK). */
export const giveBackSec = (receiveCount: number, visibilityTimeoutSec: number): number =>
  Math.min(visibilityTimeoutSec, GIVE_BACK.baseSec * 2 ** Math.max(0, receiveCount - 1));

/** `fn`, retried per RECORD_RETRY while it fails with a transient service error. */
async function retryTransient<T>(
  fn: () => Promise<T>,
  onRetry: (attempt: number, delayMs: number, err: unknown) => void,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (!isTransientServiceError(err) || attempt >= RECORD_RETRY.attempts) throw err;
      const cap = Math.min(RECORD_RETRY.maxDelayMs, RECORD_RETRY.baseDelayMs * 2 ** (attempt - 1));
      const delayMs = Math.round(cap * (0.5 + Math.random() / 2));
      onRetry(attempt, delayMs, err);
      await sleep(delayMs);
    }
  }
}

export function sqsBatchHandler<T>(ctx: StageContext, spec: BatchHandlerSpec<T>): SqsBatchHandler {
  const handleRecord = async (record: SQSRecord, context?: Context): Promise<void> => {
    const receiveCount = Number(record.attributes.ApproximateReceiveCount ?? '1');
    const onRetry = (attempt: number, delayMs: number, err: unknown) =>
      ctx.log.warn('transient failure; the record is retried in this invocation', {
        function: spec.name,
        messageId: record.messageId,
        attempt,
        retryInMs: delayMs,
        error: describeError(err),
      });
    let payload: unknown;
    const done = () => {
      const runId = runIdOfMessage(payload ?? parseLoosely(record.body));
      if (runId && spec.queue) ctx.tally?.handled(runId, spec.queue);
    };
    try {
      await retryTransient(async () => {
        payload = await decodeMessage(ctx.blobs, record.body);
        const parsed = spec.schema.safeParse(payload);
        if (!parsed.success)
          throw new BadMessageError(`${spec.name}: invalid message: ${z.prettifyError(parsed.error)}`);
        const remaining = context?.getRemainingTimeInMillis?.bind(context);
        const meta = {
          messageId: record.messageId,
          receiveCount,
          ...(remaining ? { remainingMs: remaining } : {}),
        };
        if (ctx.tally) await ctx.tally.within(runIdOfMessage(payload), () => spec.handle(parsed.data, meta));
        else await spec.handle(parsed.data, meta);
      }, onRetry);
      done();
    } catch (err) {
      const last = receiveCount >= spec.maxReceiveCount;
      if ((isPermanent(err) || last) && ctx.deadLetter) {
        const reason = `${describeError(err)}${isPermanent(err) ? '' : ` (after ${receiveCount} attempts)`}`;
        ctx.log.error('record dead-lettered', { function: spec.name, messageId: record.messageId, reason });
        const of = groupOfPayload(payload ?? parseLoosely(record.body));
        const stage = DeadLetterStageSchema.safeParse(spec.name);
        const deadLetter = ctx.deadLetter;
        await retryTransient(async () => {
          if (of && stage.success)
            await recordDeadLetter(ctx, {
              stage: stage.data,
              of,
              messageId: record.messageId,
              reason,
              receiveCount,
            });
          await deadLetter.send(record.body, {
            attributes: {
              [ATTR.deadLetterReason]: reason.slice(0, 4000),
              [ATTR.sourceQueue]: record.eventSourceARN,
              [ATTR.receiveCount]: String(receiveCount),
            },
          });
        }, onRetry);
        done();
        return;
      }
      const retryInSec = await giveBack(ctx, record, receiveCount);
      ctx.log.warn('record failed; it will be retried', {
        function: spec.name,
        messageId: record.messageId,
        receiveCount,
        ...(retryInSec !== undefined ? { retryInSec } : {}),
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      throw err;
    }
  };
  return async (event, context) => {
    // One processor per invocation: the embedded runtime may run several batches of a function at once.
    const response = await processPartialResponse(
      event,
      (record: SQSRecord) => handleRecord(record, context),
      new BatchProcessor(EventType.SQS),
      {
        ...(context ? { context } : {}),
        throwOnFullBatchFailure: false,
      },
    );
    await ctx.tally?.settle();
    return response;
  };
}

/**
 * Makes a failed record visible again after its backoff (GIVE_BACK); returns the seconds, or undefined when the
 * stage has no handle on its queue or the call failed (the message then waits out its visibility timeout).
 */
async function giveBack(
  ctx: StageContext,
  record: SQSRecord,
  receiveCount: number,
): Promise<number | undefined> {
  if (!ctx.source) return undefined;
  try {
    const sec = giveBackSec(receiveCount, await ctx.source.visibilityTimeout());
    await ctx.source.changeVisibility(record.receiptHandle, sec);
    return sec;
  } catch (err) {
    ctx.log.warn("could not shorten the failed record's visibility; it waits out its timeout", {
      messageId: record.messageId,
      error: describeError(err),
    });
    return undefined;
  }
}

/** Any key under a run's folder: its id. */
const RUN_KEY = templatePattern(`${KEY_TEMPLATES.runPrefix}{path}`, { path: '.+' });

/**
 * The run a message belongs to: its `runId` (an input check, a scored-group message), its group's (a rollout start)
 * or its trajectory's group's (a continuation, a tool call, a reward request), or the run folder of the key an S3
 * notification names (a run or policy event).
 */
export function runIdOfMessage(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null) return undefined;
  const p = payload as {
    runId?: unknown;
    group?: { runId?: unknown };
    trajectory?: { group?: { runId?: unknown } };
    Records?: { s3?: { object?: { key?: unknown } } }[];
  };
  const direct = p.runId ?? p.group?.runId ?? p.trajectory?.group?.runId;
  if (typeof direct === 'string') return direct;
  const key = p.Records?.[0]?.s3?.object?.key;
  return typeof key === 'string' ? RUN_KEY.exec(decodeS3Key(key))?.groups?.runId : undefined;
}

function parseLoosely(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
