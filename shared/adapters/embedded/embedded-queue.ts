// The embedded Queue: an in-process standard queue with SQS's semantics — at-least-once delivery, a
// visibility timeout per receive, receive counts, redrive to a dead-letter queue after maxReceiveCount,
// delays and long polling. Receipt handles go stale on redelivery, as on SQS.
import { randomUUID } from 'node:crypto';
import type { Queue, QueueDepth, ReceivedMessage, ReceiveOptions, SendOptions } from '#shared/ports/queue';
import { assertMessageFits, planBatches } from '#shared/ports/queue-limits';
import { MinHeap } from './min-heap.ts';
import { type JournalCompaction, type JournaledMessage, QueueJournal } from './queue-journal.ts';

export interface EmbeddedQueueOptions {
  readonly name: string;
  /** Seconds; fractions are allowed here (tests), unlike SQS. */
  readonly visibilityTimeoutSec: number;
  /** Redrive policy: after this many receives without a delete, the next receive moves it to `deadLetter`. */
  readonly maxReceiveCount?: number;
  readonly deadLetter?: EmbeddedQueue;
  /** Journal file that keeps the queue across process exits. */
  readonly journalPath?: string;
  /** When the journal is rewritten to its live messages during a run (queue-journal.ts has the defaults). */
  readonly journalCompaction?: JournalCompaction;
  readonly now?: () => number;
}

interface Msg extends JournaledMessage {
  /** Bumped on every receive or visibility change: stale heap entries and receipt handles are detected by it. */
  gen: number;
  state: 'ready' | 'waiting';
}

interface Waiter {
  max: number;
  visibilityMs: number;
  resolve: (m: ReceivedMessage[]) => void;
  timer: NodeJS.Timeout;
  onAbort?: () => void;
  signal?: AbortSignal;
}

export class InvalidReceiptHandleError extends Error {
  override name = 'InvalidReceiptHandleError';
}

export class EmbeddedQueue implements Queue {
  readonly name: string;
  readonly arn: string;
  private readonly visibilityMs: number;
  private readonly messages = new Map<string, Msg>();
  /** Visible messages in arrival order (entries of deleted or re-hidden messages are skipped lazily). */
  private ready: { id: string; gen: number }[] = [];
  private readyHead = 0;
  /** In-flight and delayed messages by the time they turn visible. */
  private readonly waiting = new MinHeap<{ id: string; gen: number; at: number }>((a, b) => a.at < b.at);
  private readonly waiters: Waiter[] = [];
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Number.POSITIVE_INFINITY;
  private readonly journal: QueueJournal | undefined;
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly opts: EmbeddedQueueOptions) {
    this.name = opts.name;
    this.arn = `embedded:${opts.name}`;
    this.visibilityMs = opts.visibilityTimeoutSec * 1000;
    this.now = opts.now ?? Date.now;
    if (opts.maxReceiveCount !== undefined && !opts.deadLetter)
      throw new Error(`queue ${opts.name}: maxReceiveCount needs a deadLetter queue`);
    if (opts.journalPath) {
      const { journal, messages } = QueueJournal.open(opts.journalPath, opts.journalCompaction);
      this.journal = journal;
      const t = this.now();
      for (const m of messages) this.insert({ ...m, visibleAt: Math.max(m.visibleAt, t) });
    }
  }

  async send(body: string, opts: SendOptions = {}): Promise<{ messageId: string }> {
    assertMessageFits(this.name, body, opts);
    return { messageId: this.sendSync(body, opts) };
  }

  /** SQS's limits hold here too (a message over 256 KiB is refused), so a test sees what SQS would refuse. */
  async sendBatch(
    entries: readonly { body: string; opts?: SendOptions }[],
  ): Promise<{ messageId: string }[]> {
    return planBatches(this.name, entries)
      .flat()
      .map((e) => ({ messageId: this.sendSync(e.body, e.opts ?? {}) }));
  }

  /** Adds a message as sent (redrive from a source queue keeps the original send time and attributes). */
  sendSync(body: string, opts: SendOptions = {}, sentAt = this.now()): string {
    this.assertOpen();
    const id = randomUUID();
    const t = this.now();
    const m: JournaledMessage = {
      id,
      body,
      attributes: { ...(opts.attributes ?? {}) },
      sentAt,
      visibleAt: t + (opts.delaySec ?? 0) * 1000,
      receiveCount: 0,
      firstReceivedAt: 0,
    };
    this.journal?.send(m);
    this.insert(m);
    this.serveWaiters();
    return id;
  }

  async receive(opts: ReceiveOptions = {}): Promise<ReceivedMessage[]> {
    this.assertOpen();
    const max = Math.max(1, Math.min(10, opts.maxMessages ?? 1));
    const visibilityMs = (opts.visibilityTimeoutSec ?? this.opts.visibilityTimeoutSec) * 1000;
    const got = this.take(max, visibilityMs);
    const waitMs = (opts.waitTimeSec ?? 0) * 1000;
    if (got.length > 0 || waitMs <= 0 || opts.signal?.aborted) return got;
    return new Promise((resolve) => {
      const w: Waiter = {
        max,
        visibilityMs,
        resolve: (msgs) => {
          clearTimeout(w.timer);
          if (w.onAbort) w.signal?.removeEventListener('abort', w.onAbort);
          resolve(msgs);
        },
        timer: setTimeout(() => {
          this.removeWaiter(w);
          w.resolve(this.take(max, visibilityMs));
        }, waitMs),
      };
      if (opts.signal) {
        w.signal = opts.signal;
        w.onAbort = () => {
          this.removeWaiter(w);
          w.resolve([]);
        };
        opts.signal.addEventListener('abort', w.onAbort, { once: true });
      }
      this.waiters.push(w);
      this.armWake();
    });
  }

  async delete(receiptHandle: string): Promise<void> {
    const m = this.byHandle(receiptHandle);
    // A stale handle (the message was received again since) leaves the message in place, as on SQS.
    if (!m) return;
    this.messages.delete(m.id);
    this.journal?.del(m.id);
  }

  async deleteBatch(receiptHandles: readonly string[]): Promise<void> {
    for (const h of receiptHandles) await this.delete(h);
  }

  async changeVisibility(receiptHandle: string, timeoutSec: number): Promise<void> {
    const m = this.byHandle(receiptHandle);
    if (m?.state !== 'waiting' || m.visibleAt <= this.now())
      throw new InvalidReceiptHandleError(
        `${this.name}: message for handle ${receiptHandle} is not in flight`,
      );
    m.gen++;
    m.visibleAt = this.now() + timeoutSec * 1000;
    // The handle stays valid until the next receive: re-key it to the new generation.
    this.waiting.push({ id: m.id, gen: m.gen, at: m.visibleAt });
    this.handles.set(receiptHandle, m.gen);
    if (timeoutSec <= 0) this.serveWaiters();
    else this.armWake();
  }

  async visibilityTimeout(): Promise<number> {
    return this.opts.visibilityTimeoutSec;
  }

  /**
   * Hands a received message back untried: visible now, and its receive no longer counted (embedded only; SQS has
   * no such call). For a consumer stopped cleanly (Ctrl-C) before it could act on the message, so stopping and
   * resuming a run never moves a message toward its dead-letter queue; a consumer that crashed does not call it.
   */
  async returnUntried(receiptHandle: string): Promise<void> {
    const m = this.byHandle(receiptHandle);
    if (!m) return;
    await this.changeVisibility(receiptHandle, 0);
    if (m.receiveCount > 0) m.receiveCount--;
    this.journal?.recv(m.id, m.receiveCount, m.firstReceivedAt);
  }

  async depth(): Promise<QueueDepth> {
    this.promote();
    let visible = 0;
    let inFlight = 0;
    let delayed = 0;
    for (const m of this.messages.values()) {
      if (m.state === 'ready') visible++;
      else if (m.receiveCount > 0) inFlight++;
      else delayed++;
    }
    return { visible, inFlight, delayed };
  }

  /** Number of messages not yet deleted (visible, in flight or delayed). */
  get size(): number {
    return this.messages.size;
  }

  /**
   * Every message not yet deleted, in arrival order, without receiving it: receive counts, visibility and
   * handles stay as they are (a queue browser; SQS has none, so only in-process callers can look this way).
   */
  browse(): {
    messageId: string;
    body: string;
    attributes: Readonly<Record<string, string>>;
    receiveCount: number;
  }[] {
    return [...this.messages.values()]
      .sort((a, b) => a.sentAt - b.sentAt)
      .map((m) => ({
        messageId: m.id,
        body: m.body,
        attributes: m.attributes,
        receiveCount: m.receiveCount,
      }));
  }

  /** Stops timers, answers pending long polls with nothing and closes the journal. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.resolve([]);
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.journal?.close();
  }

  // --- internals -------------------------------------------------------------------------------------

  /** receiptHandle -> generation at which it was issued. */
  private readonly handles = new Map<string, number>();

  private insert(m: JournaledMessage): void {
    const msg: Msg = { ...m, gen: 0, state: 'waiting' };
    this.messages.set(m.id, msg);
    if (m.visibleAt <= this.now()) this.makeReady(msg);
    else this.waiting.push({ id: m.id, gen: 0, at: m.visibleAt });
  }

  private makeReady(m: Msg): void {
    m.state = 'ready';
    this.ready.push({ id: m.id, gen: m.gen });
  }

  /** Moves messages whose visibility expired into the ready list. */
  private promote(): void {
    const t = this.now();
    for (let top = this.waiting.peek(); top && top.at <= t; top = this.waiting.peek()) {
      this.waiting.pop();
      const m = this.messages.get(top.id);
      if (m && m.gen === top.gen && m.state === 'waiting') this.makeReady(m);
    }
  }

  private take(max: number, visibilityMs: number): ReceivedMessage[] {
    this.promote();
    const out: ReceivedMessage[] = [];
    const t = this.now();
    while (out.length < max && this.readyHead < this.ready.length) {
      const entry = this.ready[this.readyHead++]!;
      const m = this.messages.get(entry.id);
      if (!m || m.gen !== entry.gen || m.state !== 'ready') continue;
      const limit = this.opts.maxReceiveCount;
      if (limit !== undefined && m.receiveCount >= limit) {
        this.redrive(m);
        continue;
      }
      m.receiveCount++;
      if (m.receiveCount === 1) m.firstReceivedAt = t;
      m.gen++;
      m.state = 'waiting';
      m.visibleAt = t + visibilityMs;
      this.waiting.push({ id: m.id, gen: m.gen, at: m.visibleAt });
      this.journal?.recv(m.id, m.receiveCount, m.firstReceivedAt);
      const receiptHandle = `${m.id}:${m.gen}:${randomUUID().slice(0, 8)}`;
      this.handles.set(receiptHandle, m.gen);
      out.push({
        messageId: m.id,
        receiptHandle,
        body: m.body,
        receiveCount: m.receiveCount,
        sentAt: m.sentAt,
        firstReceivedAt: m.firstReceivedAt,
        attributes: m.attributes,
      });
    }
    this.compactReady();
    if (out.length > 0) this.armWake();
    return out;
  }

  private redrive(m: Msg): void {
    this.messages.delete(m.id);
    this.journal?.del(m.id);
    this.opts.deadLetter!.sendSync(m.body, { attributes: m.attributes }, m.sentAt);
  }

  /** The message a handle refers to, if the handle is still current. */
  private byHandle(receiptHandle: string): Msg | undefined {
    const gen = this.handles.get(receiptHandle);
    const id = receiptHandle.split(':')[0] ?? '';
    const m = this.messages.get(id);
    if (gen === undefined || !m) {
      this.handles.delete(receiptHandle);
      return undefined;
    }
    if (m.gen !== gen) {
      // Superseded by a later receive; visibility changes re-key the handle, so a mismatch means stale.
      this.handles.delete(receiptHandle);
      return undefined;
    }
    return m;
  }

  private compactReady(): void {
    if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
      this.ready = this.ready.slice(this.readyHead);
      this.readyHead = 0;
    }
    // Handles of deleted messages are dropped as they are used; bound the map for long runs.
    if (this.handles.size > 4 * this.messages.size + 1024) {
      for (const [h, gen] of this.handles) {
        const m = this.messages.get(h.split(':')[0] ?? '');
        if (!m || m.gen !== gen) this.handles.delete(h);
      }
    }
  }

  private serveWaiters(): void {
    while (this.waiters.length > 0) {
      const w = this.waiters[0]!;
      const got = this.take(w.max, w.visibilityMs);
      if (got.length === 0) break;
      this.waiters.shift();
      w.resolve(got);
    }
    this.armWake();
  }

  /** Keeps one timer for the next visibility expiry while long polls are waiting. */
  private armWake(): void {
    if (this.closed || this.waiters.length === 0) {
      if (this.wakeTimer) clearTimeout(this.wakeTimer);
      this.wakeTimer = undefined;
      this.wakeAt = Number.POSITIVE_INFINITY;
      return;
    }
    const top = this.waiting.peek();
    if (!top || top.at >= this.wakeAt) return;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeAt = top.at;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = undefined;
        this.wakeAt = Number.POSITIVE_INFINITY;
        this.serveWaiters();
      },
      Math.max(0, top.at - this.now()),
    );
  }

  private removeWaiter(w: Waiter): void {
    const i = this.waiters.indexOf(w);
    if (i >= 0) this.waiters.splice(i, 1);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`queue ${this.name} is closed`);
  }
}
