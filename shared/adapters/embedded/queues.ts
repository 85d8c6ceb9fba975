// Builds the embedded queues of the topology (each with its dead-letter queue), optionally journaled to a
// folder so a run can be resumed after the process exits.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { QueueSet } from '#shared/ports/queue-set';
import { dlqName, QUEUES, type QueueName } from '#shared/topology';
import { EmbeddedQueue } from './embedded-queue.ts';
import { claimJournals, releaseJournals } from './journal-owner.ts';
import type { JournalCompaction } from './queue-journal.ts';

export interface EmbeddedQueuesOptions {
  /** Folder for the queue journals; without it the queues live only in memory. */
  readonly journalDir?: string;
  /** Per-queue visibility timeouts (seconds) replacing the topology's (which are sized for Lambda). */
  readonly visibilityTimeoutSec?: Partial<Record<QueueName, number>>;
  /** When each journal is rewritten during a run (queue-journal.ts has the defaults). */
  readonly journalCompaction?: JournalCompaction;
}

/** Throws JournalsInUseError when another live process holds the journals (journal-owner.ts). */
export function createEmbeddedQueues(opts: EmbeddedQueuesOptions = {}): QueueSet<EmbeddedQueue> {
  if (opts.journalDir) {
    mkdirSync(opts.journalDir, { recursive: true });
    claimJournals(opts.journalDir);
  }
  const queues = {} as Record<QueueName, EmbeddedQueue>;
  const dlqs = {} as Record<QueueName, EmbeddedQueue>;
  for (const spec of Object.values(QUEUES)) {
    const journal = (name: string) => (opts.journalDir ? join(opts.journalDir, `${name}.jsonl`) : undefined);
    const dlq = new EmbeddedQueue({
      name: dlqName(spec.name),
      visibilityTimeoutSec: 30,
      journalPath: journal(dlqName(spec.name)),
      journalCompaction: opts.journalCompaction,
    });
    dlqs[spec.name] = dlq;
    queues[spec.name] = new EmbeddedQueue({
      name: spec.name,
      visibilityTimeoutSec: opts.visibilityTimeoutSec?.[spec.name] ?? spec.visibilityTimeoutSec,
      maxReceiveCount: spec.maxReceiveCount,
      deadLetter: dlq,
      journalPath: journal(spec.name),
      journalCompaction: opts.journalCompaction,
    });
  }
  return {
    queues,
    dlqs,
    close: async () => {
      for (const q of [...Object.values(queues), ...Object.values(dlqs)]) q.close();
      if (opts.journalDir) releaseJournals(opts.journalDir);
    },
  };
}
