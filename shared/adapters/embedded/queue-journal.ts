// An append-only journal that makes an embedded queue survive a process exit (Ctrl-C, crash) so
// `toolrl train --resume` finds every undeleted message again, as SQS would keep it. It is compacted to its live
// messages when reopened and, during a run, whenever dead entries (deleted messages, superseded receives) make up
// most of it, so a long run's journal stays near the size of what is still queued.
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';

export interface JournaledMessage {
  id: string;
  body: string;
  attributes: Record<string, string>;
  sentAt: number;
  /** When it first becomes visible (send time + delay). */
  visibleAt: number;
  receiveCount: number;
  firstReceivedAt: number;
}

type Entry =
  | ({ op: 'send' } & JournaledMessage)
  | { op: 'recv'; id: string; receiveCount: number; firstReceivedAt: number }
  | { op: 'del'; id: string };

/** When a journal is rewritten while it is open. */
export interface JournalCompaction {
  /** Never below this size (bytes): small journals are left to grow. Default 1 MiB. */
  readonly minBytes?: number;
  /** Rewrite once more than this share of the file's bytes is dead (0 < share < 1). Default 0.5. */
  readonly maxDeadShare?: number;
}

/** The points of a rewrite, for tests that simulate a crash between them. */
export type CompactionStep = 'tmp-partly-written' | 'tmp-written' | 'renamed';

const DEFAULT_MIN_BYTES = 1 << 20;
const DEFAULT_MAX_DEAD_SHARE = 0.5;
/** What a receive adds to a message's compacted line (receive count and first-receive time), at most. */
const RECV_SLACK = 48;

const line = (e: Entry): string => `${JSON.stringify(e)}\n`;

export class QueueJournal {
  private fd: number;
  /** The messages a replay of the file would give, in first-send order (what a rewrite writes). */
  private readonly live = new Map<string, { m: JournaledMessage; bytes: number }>();
  private liveBytes = 0;
  private fileBytes = 0;
  private readonly minBytes: number;
  private readonly maxDeadShare: number;
  /** Rewrites done while open (tests read it). */
  compactions = 0;
  /** Test hook: called at each step of a rewrite; a throw there leaves the files as a crash at that point would. */
  onCompactionStep?: (step: CompactionStep) => void;

  private constructor(
    private readonly path: string,
    messages: readonly JournaledMessage[],
    opts: JournalCompaction,
  ) {
    this.minBytes = opts.minBytes ?? DEFAULT_MIN_BYTES;
    this.maxDeadShare = opts.maxDeadShare ?? DEFAULT_MAX_DEAD_SHARE;
    if (!(this.maxDeadShare > 0 && this.maxDeadShare < 1))
      throw new Error(
        `queue journal ${path}: maxDeadShare must be between 0 and 1, got ${this.maxDeadShare}`,
      );
    for (const m of messages) this.track(m, Buffer.byteLength(line({ op: 'send', ...m })));
    this.fd = this.rewrite();
  }

  /**
   * Replays the journal at `path` (if any) and compacts it to the live messages. Messages that were in flight
   * when the last process died are returned visible, as their visibility timeout would have expired.
   */
  static open(
    path: string,
    opts: JournalCompaction = {},
  ): { journal: QueueJournal; messages: JournaledMessage[] } {
    mkdirSync(dirname(path), { recursive: true });
    const messages = QueueJournal.read(path);
    return { journal: new QueueJournal(path, messages, opts), messages };
  }

  /**
   * The messages not yet deleted, read without writing (what `toolrl status` counts while another process may
   * hold the journal: only reading is safe then, and a rewrite replaces the file whole, so a reader sees the old
   * file or the new one, never half of one); none when there is no journal.
   */
  static read(path: string): JournaledMessage[] {
    const live = new Map<string, JournaledMessage>();
    if (existsSync(path)) {
      const lines = readFileSync(path, 'utf8').split('\n');
      for (const l of lines) {
        if (!l) continue;
        let e: Entry;
        try {
          e = JSON.parse(l) as Entry;
        } catch {
          // A line cut short by a crash mid-write: everything before it is intact.
          break;
        }
        if (e.op === 'send') {
          const { op: _op, ...m } = e;
          live.set(e.id, m);
        } else if (e.op === 'recv') {
          const m = live.get(e.id);
          if (m) {
            m.receiveCount = e.receiveCount;
            m.firstReceivedAt = e.firstReceivedAt;
          }
        } else live.delete(e.id);
      }
    }
    return [...live.values()];
  }

  /** Bytes in the file now (tests check that it stays bounded). */
  get sizeBytes(): number {
    return this.fileBytes;
  }

  send(m: JournaledMessage): void {
    const bytes = this.write({ op: 'send', ...m });
    this.track({ ...m }, bytes);
    this.maybeCompact();
  }

  recv(id: string, receiveCount: number, firstReceivedAt: number): void {
    this.write({ op: 'recv', id, receiveCount, firstReceivedAt });
    const entry = this.live.get(id);
    if (entry) {
      entry.m.receiveCount = receiveCount;
      entry.m.firstReceivedAt = firstReceivedAt;
    }
    this.maybeCompact();
  }

  del(id: string): void {
    this.write({ op: 'del', id });
    const entry = this.live.get(id);
    if (entry) {
      this.live.delete(id);
      this.liveBytes -= entry.bytes;
    }
    this.maybeCompact();
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  private track(m: JournaledMessage, sendLineBytes: number): void {
    const bytes = sendLineBytes + RECV_SLACK;
    this.live.set(m.id, { m, bytes });
    this.liveBytes += bytes;
  }

  private write(e: Entry): number {
    if (this.fd < 0) throw new Error(`queue journal ${this.path} is closed`);
    const text = line(e);
    const bytes = Buffer.byteLength(text);
    writeSync(this.fd, text);
    this.fileBytes += bytes;
    return bytes;
  }

  /**
   * Rewrites once the dead share passes the limit: a rewrite costs the live bytes and comes only after at least as
   * many dead bytes were appended, so its cost per operation stays constant however long the run.
   */
  private maybeCompact(): void {
    if (this.fileBytes < this.minBytes) return;
    if (this.fileBytes * (1 - this.maxDeadShare) <= this.liveBytes) return;
    const old = this.fd;
    this.fd = -1;
    closeSync(old);
    this.fd = this.rewrite();
    this.compactions++;
  }

  /**
   * Writes the live messages to a new file and renames it over the journal, returning a descriptor that appends to
   * it. A crash before the rename leaves the old journal (the same live messages, longer); after it, the new one.
   * The receive count a message had is kept; the time it turns visible stays its send-time one, so a reopen makes
   * in-flight messages visible exactly as a replay of the uncompacted journal would.
   */
  private rewrite(): number {
    const tmp = `${this.path}.compact`;
    const fd = openSync(tmp, 'w');
    let bytes = 0;
    try {
      let i = 0;
      for (const { m } of this.live.values()) {
        if (i++ === Math.floor(this.live.size / 2)) this.onCompactionStep?.('tmp-partly-written');
        const text = line({ op: 'send', ...m });
        writeSync(fd, text);
        bytes += Buffer.byteLength(text);
      }
      // Durable before it replaces the journal: a rename that reached the disk before the data would empty it.
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    this.onCompactionStep?.('tmp-written');
    renameSync(tmp, this.path);
    this.onCompactionStep?.('renamed');
    this.fileBytes = bytes;
    return openSync(this.path, 'a');
  }
}
