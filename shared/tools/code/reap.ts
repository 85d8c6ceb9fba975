// How a sandboxed run ended and how its processes are stopped: the launcher's report, the limit an exit names,
// and the kills (a process group; without namespaces, every process of the run's throwaway uid).
import { lstat, readdir } from 'node:fs/promises';
import type { LimitHit } from './limits.ts';

export interface Report {
  exit_code: number;
  wall_timeout: boolean;
  stopped: boolean;
  cpu_s: number;
}

export function parseReport(status: string): Report | null {
  const lines = status.trim().split('\n');
  if (lines.length < 2) return null;
  try {
    return JSON.parse(lines[lines.length - 1]!) as Report;
  } catch {
    return null;
  }
}

/** Names the limit that stopped a program from how it ended. */
export function classify(
  exitCode: number | null,
  cpuS: number,
  cpuLimit: number,
  stderr: string,
): LimitHit | null {
  if (exitCode === -24 || (exitCode === -9 && cpuS >= cpuLimit)) return 'cpu_time'; // SIGXCPU, then SIGKILL at the hard limit
  if (exitCode === -25) return 'file_size'; // SIGXFSZ
  if (exitCode === 0) return null;
  const tail = stderr.slice(-2000);
  if (/\bMemoryError\b/.test(tail)) return 'memory';
  if (/BlockingIOError: \[Errno 11\]|Resource temporarily unavailable/.test(tail)) return 'processes';
  if (/File too large|\[Errno 27\]/.test(tail)) return 'file_size';
  if (/No space left on device|\[Errno 28\]/.test(tail)) return 'disk';
  return null;
}

export function signalGroup(pid: number | undefined, sig: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(-pid, sig);
  } catch {
    // already gone
  }
}

/** Last resort without namespaces: SIGKILL every process owned by the run's throwaway uid. */
export async function killUid(uid: number): Promise<void> {
  for (let round = 0; round < 5; round++) {
    let found = 0;
    for (const name of await readdir('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      const st = await lstat(`/proc/${name}`).catch(() => null);
      if (st?.uid !== uid) continue;
      found++;
      try {
        process.kill(Number(name), 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    if (found === 0) return;
  }
}
