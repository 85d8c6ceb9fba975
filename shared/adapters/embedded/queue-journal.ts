// An append-only journal that makes an embedded queue survive a process exit (Ctrl-C, crash) so
// `toolrl train --resume` finds every undeleted message again, as SQS would keep it.
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
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

export class QueueJournal {
  private fd: number;

  private constructor(
    private readonly path: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /**
   * Replays the journal at `path` (if any) and compacts it to the live messages. Messages that were in flight
   * when the last process died are returned visible, as their visibility timeout would have expired.
   */
  static open(path: string): { journal: QueueJournal; messages: JournaledMessage[] } {
    mkdirSync(dirname(path), { recursive: true });
    const messages = QueueJournal.read(path);
    const tmp = `${path}.compact`;
    const fd = openSync(tmp, 'w');
    for (const m of messages) writeSync(fd, `${JSON.stringify({ op: 'send', ...m })}\n`);
    closeSync(fd);
    renameSync(tmp, path);
    return { journal: new QueueJournal(path, openSync(path, 'a')), messages };
  }

  /**
   * The messages not yet deleted, read without writing (what `toolrl status` counts while another process may
   * hold the journal: only reading is safe then); none when there is no journal.
   */
  static read(path: string): JournaledMessage[] {
    const live = new Map<string, JournaledMessage>();
    if (existsSync(path)) {
      const lines = readFileSync(path, 'utf8').split('\n');
      for (const line of lines) {
        if (!line) continue;
        let e: Entry;
        try {
          e = JSON.parse(line) as Entry;
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

  send(m: JournaledMessage): void {
    this.write({ op: 'send', ...m });
  }

  recv(id: string, receiveCount: number, firstReceivedAt: number): void {
    this.write({ op: 'recv', id, receiveCount, firstReceivedAt });
  }

  del(id: string): void {
    this.write({ op: 'del', id });
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  private write(e: Entry): void {
    if (this.fd < 0) throw new Error(`queue journal ${this.path} is closed`);
    writeSync(this.fd, `${JSON.stringify(e)}\n`);
  }
}
