// The shape of every queue handler: decode (claim check) and zod-parse each record, run the stage on it, and
// answer with a partial batch response (Powertools) so one bad record never fails its siblings. A permanent
// failure — or any failure on the last allowed receive — goes to the dead-letter queue with its reason, and a
// message that names its group is recorded as that group's drop (dead-letters.ts), so the run does not wait for it.
import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { type ZodType, z } from 'zod';
import { BadMessageError, describeError, isPermanent } from '#shared/ports/errors';
import { ATTR } from '#shared/ports/queue';
import type { StageContext } from '#shared/ports/stage-context';
import { DeadLetterStageSchema } from '#shared/schemas/dead-letter';
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
  readonly handle: (message: T, meta: RecordMeta) => Promise<void>;
}

export type SqsBatchHandler = (event: SQSEvent, context?: Context) => Promise<SQSBatchResponse>;

export function sqsBatchHandler<T>(ctx: StageContext, spec: BatchHandlerSpec<T>): SqsBatchHandler {
  const handleRecord = async (record: SQSRecord, context?: Context): Promise<void> => {
    const receiveCount = Number(record.attributes.ApproximateReceiveCount ?? '1');
    let payload: unknown;
    try {
      payload = await decodeMessage(ctx.blobs, record.body);
      const parsed = spec.schema.safeParse(payload);
      if (!parsed.success)
        throw new BadMessageError(`${spec.name}: invalid message: ${z.prettifyError(parsed.error)}`);
      const remaining = context?.getRemainingTimeInMillis?.bind(context);
      await spec.handle(parsed.data, {
        messageId: record.messageId,
        receiveCount,
        ...(remaining ? { remainingMs: remaining } : {}),
      });
    } catch (err) {
      const last = receiveCount >= spec.maxReceiveCount;
      if ((isPermanent(err) || last) && ctx.deadLetter) {
        const reason = `${describeError(err)}${isPermanent(err) ? '' : ` (after ${receiveCount} attempts)`}`;
        ctx.log.error('record dead-lettered', { function: spec.name, messageId: record.messageId, reason });
        const of = groupOfPayload(payload ?? parseLoosely(record.body));
        const stage = DeadLetterStageSchema.safeParse(spec.name);
        if (of && stage.success)
          await recordDeadLetter(ctx, {
            stage: stage.data,
            of,
            messageId: record.messageId,
            reason,
            receiveCount,
          });
        await ctx.deadLetter.send(record.body, {
          attributes: {
            [ATTR.deadLetterReason]: reason.slice(0, 4000),
            [ATTR.sourceQueue]: record.eventSourceARN,
            [ATTR.receiveCount]: String(receiveCount),
          },
        });
        return;
      }
      ctx.log.warn('record failed; it will be retried', {
        function: spec.name,
        messageId: record.messageId,
        receiveCount,
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      });
      throw err;
    }
  };
  return async (event, context) =>
    // One processor per invocation: the embedded runtime may run several batches of a function at once.
    processPartialResponse(
      event,
      (record: SQSRecord) => handleRecord(record, context),
      new BatchProcessor(EventType.SQS),
      {
        ...(context ? { context } : {}),
        throwOnFullBatchFailure: false,
      },
    );
}

function parseLoosely(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
