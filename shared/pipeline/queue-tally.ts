// Counts of each run's messages per queue, kept by the stages of one process (schemas/queue-tally.ts says why): a
// send made while a record of run R is handled counts as R's (the record's run is carried in an AsyncLocalStorage,
// so the stages need not pass it), and a record handled (or dead-lettered) counts against its queue. The counts go to
// `runs/<runId>/queue-tally/<writer>.json`: after every invocation on Lambda (a container may be frozen right after
// it, or never run again), at most every `intervalMs` in a long-lived worker, and when the process stops.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomBytes } from 'node:crypto';
import type { BlobStore } from '#shared/ports/blob-store';
import type { Log } from '#shared/ports/log';
import type { Queue, SendOptions } from '#shared/ports/queue';
import type { QueueCounts, QueueTally as QueueTallyDoc } from '#shared/schemas/queue-tally';
import { keys, type QueueName } from '#shared/topology';
import { toJson } from './blob-json.ts';

export interface QueueTallyOptions {
  /** Writes at most this often per run (0: at the end of every invocation). */
  readonly intervalMs: number;
  readonly log: Log;
  readonly now?: () => Date;
}

/** The writer name of this process: its kind and random hex, unique per start. */
export const tallyWriter = (kind: string): string => `${kind}-${randomBytes(6).toString('hex')}`;

export class QueueTally {
  readonly writer: string;
  private readonly counts = new Map<string, Map<QueueName, { sent: number; handled: number }>>();
  private readonly dirty = new Set<string>();
  private readonly lastWrite = new Map<string, number>();
  private readonly current = new AsyncLocalStorage<string>();
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly blobs: BlobStore,
    private readonly opts: QueueTallyOptions,
    kind = 'stage',
  ) {
    this.writer = tallyWriter(kind);
  }

  /** Runs `fn` with `runId` as the run its sends count for. */
  within<T>(runId: string | undefined, fn: () => Promise<T>): Promise<T> {
    return runId ? this.current.run(runId, fn) : fn();
  }

  /** Messages sent to `queue` while handling the current record (none outside one). */
  sent(queue: QueueName, n = 1): void {
    const runId = this.current.getStore();
    if (runId) this.add(runId, queue, 'sent', n);
  }

  /** A record of `runId` taken off `queue` for good: handled, or moved to its dead-letter queue. */
  handled(runId: string, queue: QueueName): void {
    this.add(runId, queue, 'handled', 1);
  }

  /** `queue` with its sends counted for the current record's run. */
  counting(queue: Queue, name: QueueName): Queue {
    const tally = this;
    return Object.assign(Object.create(queue) as Queue, {
      async send(body: string, opts?: SendOptions) {
        const r = await queue.send(body, opts);
        tally.sent(name);
        return r;
      },
      async sendBatch(entries: readonly { body: string; opts?: SendOptions }[]) {
        const r = await queue.sendBatch(entries);
        tally.sent(name, r.length);
        return r;
      },
    });
  }

  /** After an invocation: writes what changed now, or (a worker) once `intervalMs` has passed since the last write. */
  async settle(): Promise<void> {
    if (this.dirty.size === 0) return;
    const now = Date.now();
    const due = [...this.dirty].filter((r) => now - (this.lastWrite.get(r) ?? 0) >= this.opts.intervalMs);
    if (due.length > 0) await this.write(due);
    if (this.dirty.size > 0 && !this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.write([...this.dirty]);
      }, this.opts.intervalMs);
      this.timer.unref();
    }
  }

  /** Writes every run's counts that changed (the process is stopping). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.write([...this.dirty]);
  }

  private add(runId: string, queue: QueueName, what: keyof QueueCounts, n: number): void {
    const run = this.counts.get(runId) ?? new Map<QueueName, QueueCounts>();
    this.counts.set(runId, run);
    const c = run.get(queue) ?? { sent: 0, handled: 0 };
    c[what] += n;
    run.set(queue, c);
    this.dirty.add(runId);
  }

  /** One write at a time, so a later count never lands before an earlier one. */
  private write(runIds: string[]): Promise<void> {
    this.writing = this.writing.then(async () => {
      for (const runId of runIds) {
        if (!this.dirty.delete(runId)) continue;
        this.lastWrite.set(runId, Date.now());
        const doc: QueueTallyDoc = {
          schemaVersion: 1,
          runId,
          writer: this.writer,
          updatedAt: (this.opts.now?.() ?? new Date()).toISOString(),
          queues: Object.fromEntries(this.counts.get(runId) ?? []),
        };
        try {
          await this.blobs.put(keys.queueTally(runId, this.writer), toJson(doc), {
            contentType: 'application/json',
          });
        } catch (err) {
          // Counts are cumulative: the next write carries these too.
          this.dirty.add(runId);
          this.opts.log.warn('could not write the queue tally; the next write carries it', {
            runId,
            error: String(err),
          });
        }
      }
    });
    return this.writing;
  }
}
