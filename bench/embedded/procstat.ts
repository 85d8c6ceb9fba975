// CPU time and runnable threads of the processes of an embedded run, sampled from /proc (Linux): how much of
// the machine each side uses, and how often more threads want a core than there are cores (oversubscription).
import { readdirSync, readFileSync } from 'node:fs';

const TICK_S = 0.01; // USER_HZ: 100 on every Linux this runs on

interface ThreadStat {
  readonly comm: string;
  readonly state: string;
  /** user + system seconds. */
  readonly cpu: number;
}

function parseStat(text: string): ThreadStat {
  // The command name is in parentheses and may hold spaces: the fields after it are space-separated.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
  return { comm, state: rest[0] ?? '?', cpu: (Number(rest[11]) + Number(rest[12])) * TICK_S };
}

function threads(pid: number): Map<number, ThreadStat> {
  const out = new Map<number, ThreadStat>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out; // exited
  }
  for (const tid of tids) {
    try {
      out.set(Number(tid), parseStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')));
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}

export interface ProcessCpu {
  readonly name: string;
  readonly pid: number;
  /** CPU seconds over the window (all threads). */
  readonly cpuS: number;
  /** Most threads seen at once. */
  readonly maxThreads: number;
  /** CPU seconds by thread, the main thread apart, others grouped by name. */
  readonly byThread: Record<string, number>;
}

export interface CpuWindow {
  readonly wallS: number;
  readonly processes: ProcessCpu[];
  /** Mean runnable threads of these processes over the samples. */
  readonly meanRunnable: number;
  /** Share of samples with more runnable threads (of these processes) than cores. */
  readonly oversubscribed: number;
  readonly samples: number;
}

/** Samples the named processes every `intervalMs` between start() and stop(). */
export class CpuSampler {
  private readonly first = new Map<number, Map<number, ThreadStat>>();
  private readonly last = new Map<number, Map<number, ThreadStat>>();
  private readonly maxThreads = new Map<number, number>();
  private readonly names = new Map<number, string>();
  private timer: NodeJS.Timeout | undefined;
  private runnable = 0;
  private over = 0;
  private samples = 0;
  private t0 = 0;
  private t1 = 0;

  constructor(
    private readonly cores: number,
    private readonly intervalMs = 50,
  ) {}

  /** Adds a process (now or later: a learner starts after the pipeline). */
  watch(name: string, pid: number): void {
    if (this.names.has(pid)) return;
    this.names.set(pid, name);
    if (this.timer) this.first.set(pid, threads(pid));
  }

  start(): void {
    this.t0 = performance.now();
    for (const pid of this.names.keys()) this.first.set(pid, threads(pid));
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  private sample(): void {
    let running = 0;
    for (const pid of this.names.keys()) {
      const now = threads(pid);
      if (now.size === 0) continue;
      if (!this.first.has(pid)) this.first.set(pid, now);
      this.last.set(pid, now);
      this.maxThreads.set(pid, Math.max(this.maxThreads.get(pid) ?? 0, now.size));
      for (const t of now.values()) if (t.state === 'R') running++;
    }
    // The sampler itself is one runnable thread of the node process while it reads /proc.
    running = Math.max(0, running - 1);
    this.runnable += running;
    if (running > this.cores) this.over++;
    this.samples++;
  }

  stop(): CpuWindow {
    if (this.timer) clearInterval(this.timer);
    this.sample();
    this.t1 = performance.now();
    const processes: ProcessCpu[] = [];
    for (const [pid, name] of this.names) {
      const a = this.first.get(pid) ?? new Map<number, ThreadStat>();
      const b = this.last.get(pid) ?? new Map<number, ThreadStat>();
      const byThread: Record<string, number> = {};
      let total = 0;
      for (const [tid, t] of b) {
        // A thread that started inside the window counts from zero.
        const spent = t.cpu - (a.get(tid)?.cpu ?? 0);
        total += spent;
        const key = tid === pid ? 'main' : t.comm;
        byThread[key] = (byThread[key] ?? 0) + spent;
      }
      processes.push({ name, pid, cpuS: total, maxThreads: this.maxThreads.get(pid) ?? 0, byThread });
    }
    return {
      wallS: (this.t1 - this.t0) / 1000,
      processes,
      meanRunnable: this.samples ? this.runnable / this.samples : 0,
      oversubscribed: this.samples ? this.over / this.samples : 0,
      samples: this.samples,
    };
  }
}
