// A run that cannot make progress fails, saying why, instead of waiting forever. The learner says when it has
// nothing to do until more groups come (its `waiting` line, naming what it waits for); every stage's work is a
// message in a queue (received ones stay there, in flight, until handled), and every notification is a message too.
// The learner's own work is the one thing outside the queues: a group written to it after it said it waits (its
// `waiting` line counts the input lines it had read) is work it is on, however long its step takes, until it says
// it waits again. So once the learner waits, has been written nothing since and, for `limitSec`, has said nothing
// more while no queue of the run has held a message (waiting, in flight or delayed; scored groups the learner has
// received and holds do not count), nothing can bring it what it waits for: the run is stalled. The limit only
// bounds how long a stall is watched before it is called one; a slow machine does not make a stall out of a run
// that has work queued or a learner at work.
import type { Queue } from '#shared/ports/queue';
import type { LearnerOutputLine } from '#shared/schemas/learner-stdio';
import type { QueueName } from '#shared/topology';

/** How long a run may wait with its learner idle and every queue empty before it fails (seconds). */
export const STALL_LIMIT_SEC = 300;

export interface StallWatchOptions {
  /** Seconds of quiet before a waiting run is called stalled (default STALL_LIMIT_SEC). */
  readonly limitSec?: number;
  /** Lines written to the learner so far (LearnerBridge.linesWritten). */
  readonly linesWritten: () => number;
  readonly now?: () => number;
}

export class StallWatch {
  private waitingFor: string | undefined;
  private linesRead = 0;
  private quietSince: number | undefined;
  private readonly limitSec: number;
  private readonly now: () => number;

  constructor(
    private readonly queues: Readonly<Record<QueueName, Queue>>,
    private readonly opts: StallWatchOptions,
  ) {
    this.limitSec = opts.limitSec ?? STALL_LIMIT_SEC;
    this.now = opts.now ?? Date.now;
  }

  /** Every learner line: `waiting` starts a watch, anything else (a step, a drop, a publish) ends it. */
  onLearnerLine(line: LearnerOutputLine): void {
    if (line.type === 'waiting') {
      this.waitingFor = line.waitingFor;
      this.linesRead = line.linesRead;
    } else this.stopWatching();
  }

  /** Why the run is stalled, once it has been for the limit; undefined until then. Call it every so often. */
  async check(): Promise<string | undefined> {
    if (this.waitingFor === undefined) return undefined;
    if (this.opts.linesWritten() > this.linesRead) {
      this.stopWatching(); // written something it had not read: at work until it says it waits again
      return undefined;
    }
    const busy = await this.busyQueues();
    if (busy.length > 0) {
      this.quietSince = undefined;
      return undefined;
    }
    const t = this.now();
    this.quietSince ??= t;
    if (t - this.quietSince < this.limitSec * 1000) return undefined;
    return (
      `the run cannot make progress: the learner has waited for groups for ${this.limitSec} s (${this.waitingFor}) ` +
      'while no queue held a message that could bring them (nothing to roll out, run tools for, score or feed)'
    );
  }

  private stopWatching(): void {
    this.waitingFor = undefined;
    this.quietSince = undefined;
  }

  private async busyQueues(): Promise<QueueName[]> {
    const names = Object.keys(this.queues) as QueueName[];
    const depths = await Promise.all(names.map((q) => this.queues[q].depth()));
    return names.filter((q, i) => {
      const d = depths[i]!;
      // Scored groups in flight are the ones the learner holds (the bridge received them for it).
      return d.visible + d.delayed + (q === 'scored-groups' ? 0 : d.inFlight) > 0;
    });
  }
}
