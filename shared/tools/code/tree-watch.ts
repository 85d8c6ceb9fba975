// Limits of a sandbox's whole process tree, which rlimits cannot give: rlimits bound each process (four
// processes of 600 MB each passed a "1 GB" RLIMIT_AS), so while a run is alive its tree is measured from the
// host's /proc every few milliseconds (memory as PSS, so pages a fork shares count once) and stopped when the
// sum passes the limit. Runs that finish within one interval, most tool calls, are never measured at all.
import { readdirSync, readFileSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

const PAGE_BYTES = 4096;

/** Direct children of `pid` (every thread can have some), or null where the kernel does not list them. */
function childrenOf(pid: number): number[] | null {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const kids: number[] = [];
  for (const tid of tasks) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && tid === String(pid)) return null;
      continue;
    }
    for (const p of text.split(' ')) if (p.trim()) kids.push(Number(p));
  }
  return kids;
}

/** Parent of every process, from a scan of /proc (where `children` files are not compiled in). */
function parentsByScan(): Map<number, number[]> {
  const byParent = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      byParent.set(ppid, [...(byParent.get(ppid) ?? []), Number(name)]);
    } catch {
      // exited meanwhile
    }
  }
  return byParent;
}

/** Every process below `root` (not `root` itself). */
export function descendants(root: number): number[] {
  const out: number[] = [];
  let scan: Map<number, number[]> | null = null;
  const queue = [root];
  while (queue.length > 0 && out.length < 100_000) {
    const pid = queue.pop()!;
    let kids = childrenOf(pid);
    if (kids === null) {
      scan ??= parentsByScan();
      kids = scan.get(pid) ?? [];
    }
    out.push(...kids);
    queue.push(...kids);
  }
  return out;
}

/** Proportional set size of a process in bytes (its share of pages it shares with others), or RSS. */
export function memoryOf(pid: number): number {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const m = /^Pss:\s+(\d+) kB/m.exec(rollup);
    if (m) return Number(m[1]) * 1024;
  } catch {
    // no smaps_rollup (kernel < 4.14) or gone: fall back below
  }
  try {
    return Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_BYTES;
  } catch {
    return 0;
  }
}

/** Bytes allocated under the given folders, stopping early once past `limit` (or past `maxEntries` entries). */
export async function diskUsage(dirs: string[], limit: number, maxEntries = 10_000): Promise<number> {
  let total = 0;
  let entries = 0;
  const stack = [...dirs];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      continue;
    }
    for (const name of names) {
      if (++entries > maxEntries) return Number.POSITIVE_INFINITY; // a million empty files is a disk attack too
      const st = await lstat(join(dir, name)).catch(() => null);
      if (!st) continue;
      total += st.blocks * 512; // what the files take on disk (a sparse file takes little)
      if (total > limit) return total;
      if (st.isDirectory()) stack.push(join(dir, name));
    }
  }
  return total;
}

export type TreeLimit = 'memory' | 'processes' | 'disk';

export interface TreeWatchOptions {
  /** The process the run was spawned as (bwrap, or the launcher); its descendants are the run. */
  root: number;
  /** Processes below `root` that are the sandbox's own, not the program's (bwrap's init in the namespace). */
  helpers: number;
  memoryBytes: number;
  processes: number;
  /** Folders on the host the program writes (process isolation); under bwrap its tmpfs sizes bound it. */
  disk?: { dirs: string[]; bytes: number };
  intervalMs?: number;
  onLimit: (why: TreeLimit) => void;
}

/** Measures the tree every `intervalMs` until stopped; calls onLimit once, on the first limit passed. */
export function watchTree(o: TreeWatchOptions): { stop(): void } {
  let stopped = false;
  let busy = false;
  const tick = async () => {
    if (stopped || busy) return;
    busy = true;
    try {
      const pids = descendants(o.root);
      let why: TreeLimit | null = null;
      if (pids.length - o.helpers > o.processes) why = 'processes';
      else if (pids.reduce((sum, pid) => sum + memoryOf(pid), 0) > o.memoryBytes) why = 'memory';
      else if (o.disk && (await diskUsage(o.disk.dirs, o.disk.bytes)) > o.disk.bytes) why = 'disk';
      if (why && !stopped) {
        stopped = true;
        clearInterval(timer);
        o.onLimit(why);
      }
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void tick(), o.intervalMs ?? 20);
  timer.unref();
  return {
    stop: () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
