// Redrive of an embedded run whose `toolrl train` is running: its queues live in that process, so `toolrl redrive`
// leaves a request in the run's folder and the pipeline (which looks every second) carries it out and answers
// beside it. When no process holds the queues, the CLI opens their journals and redrives itself.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { getJson, putJson } from '#shared/pipeline/blob-json';
import { type RedriveResult, redriveRun } from '#shared/pipeline/redrive';
import type { BlobStore } from '#shared/ports/blob-store';
import type { QueueSet } from '#shared/ports/queue-set';
import { DeadLetterStageSchema } from '#shared/schemas/dead-letter';
import { pause } from '#shared/tools/limits';
import { keys } from '#shared/topology';

const RequestSchema = z.object({
  schemaVersion: z.literal(1),
  stages: z.array(DeadLetterStageSchema).nullable(),
  requestedAt: z.string(),
});

const AnswerSchema = z.union([
  z.object({
    ok: z.literal(true),
    result: z.custom<RedriveResult>((v) => typeof v === 'object' && v !== null),
  }),
  z.object({ ok: z.literal(false), error: z.string() }),
]);

const answerKey = (requestKey: string) => requestKey.replace(/\.json$/, '.answer.json');

/** Carries out the run's pending redrive requests against the pipeline's own queues (the pipeline's poll). */
export async function serveRedriveRequests(
  blobs: BlobStore,
  queues: QueueSet,
  runId: string,
): Promise<number> {
  const prefix = keys.redriveRequests(runId);
  const all = await blobs.listKeys(prefix);
  let served = 0;
  for (const key of all) {
    if (key.endsWith('.answer.json') || all.includes(answerKey(key))) continue;
    const request = await getJson(blobs, key, RequestSchema).catch(() => undefined);
    let answer: z.infer<typeof AnswerSchema>;
    try {
      if (!request) throw new Error(`${key} is not a redrive request`);
      const result = await redriveRun(blobs, queues, runId, {
        ...(request.stages ? { stages: request.stages } : {}),
        waitTimeSec: 0, // in-process queues answer exactly: no long poll needed to see every message
      });
      answer = { ok: true, result };
    } catch (err) {
      answer = { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
    await putJson(blobs, answerKey(key), answer);
    served++;
  }
  return served;
}

export class RedriveRequestError extends Error {
  override name = 'RedriveRequestError';
}

/** Asks the process holding the run's queues to redrive; its answer, or an error naming why there is none. */
export async function requestRedrive(
  blobs: BlobStore,
  runId: string,
  stages: readonly z.infer<typeof DeadLetterStageSchema>[] | undefined,
  opts: { timeoutMs?: number; holder?: string } = {},
): Promise<RedriveResult> {
  const key = `${keys.redriveRequests(runId)}${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID().slice(0, 8)}.json`;
  await putJson(blobs, key, {
    schemaVersion: 1,
    stages: stages ? [...stages] : null,
    requestedAt: new Date().toISOString(),
  });
  const end = Date.now() + (opts.timeoutMs ?? 60_000);
  try {
    for (;;) {
      const answer = await getJson(blobs, answerKey(key), AnswerSchema);
      if (answer) {
        if (!answer.ok) throw new RedriveRequestError(answer.error);
        return answer.result;
      }
      if (Date.now() > end)
        throw new RedriveRequestError(
          `${opts.holder ?? "the process that holds the run's queues"} did not answer the redrive request ${key} ` +
            `within ${Math.round((opts.timeoutMs ?? 60_000) / 1000)} s`,
        );
      await pause(200);
    }
  } finally {
    await blobs.delete(key).catch(() => {});
    await blobs.delete(answerKey(key)).catch(() => {});
  }
}
