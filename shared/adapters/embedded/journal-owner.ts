// Which process holds a run's queue journals. Only that process may touch them (its queues live in its memory; a
// second writer would be lost at its next compaction), so `toolrl train --resume` and `toolrl redrive` check the
// owner first: a live one is asked (redrive) or refused (a second train), a dead one's claim is taken over. The
// claim is also how `toolrl status` tells a running embedded run from one whose process is gone (interrupted).
//
// A claim names the process by pid, host and, where /proc has it (Linux), the process's start time in clock ticks
// since boot, so a pid the system has since given to another process does not pass for the owner.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

const OwnerSchema = z.object({
  pid: z.number().int().positive(),
  host: z.string(),
  since: z.string(),
  /** The process's start time (/proc/<pid>/stat, field 22); absent where there is no /proc. */
  startTicks: z.number().int().nonnegative().optional(),
});
export type JournalOwner = z.infer<typeof OwnerSchema>;

const ownerFile = (dir: string) => join(dir, 'owner.json');

export class JournalsInUseError extends Error {
  override name = 'JournalsInUseError';
}

/** A process's start time in clock ticks since boot (Linux /proc); undefined where it cannot be read. */
export function processStartTicks(pid: number | 'self'): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses) start at field 3; starttime is 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[22 - 3]);
    return Number.isInteger(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

function alive(owner: JournalOwner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false; // EPERM: alive, another user's
  }
  if (owner.startTicks === undefined) return true;
  const now = processStartTicks(owner.pid);
  return now === undefined || now === owner.startTicks; // another start time: the pid was reused
}

/** The claim in `dir` as written, whoever made it and whether or not its process lives; undefined when none. */
export function readJournalClaim(dir: string): JournalOwner | undefined {
  try {
    return OwnerSchema.parse(JSON.parse(readFileSync(ownerFile(dir), 'utf8')));
  } catch {
    return undefined; // none, or unreadable (a crash mid-write): nobody holds them
  }
}

/**
 * Whether the claim's process runs: `alive`, `gone` (the pid is free or another process's), or `elsewhere` (it was
 * made on another host, which this one cannot look into).
 */
export function claimState(owner: JournalOwner): 'alive' | 'gone' | 'elsewhere' {
  if (owner.host !== hostname()) return 'elsewhere';
  return owner.pid === process.pid || alive(owner) ? 'alive' : 'gone';
}

/** The live process (on this host) that holds the journals in `dir`, other than this one; undefined when none. */
export function journalOwner(dir: string): JournalOwner | undefined {
  const owner = readJournalClaim(dir);
  if (!owner || owner.pid === process.pid || claimState(owner) !== 'alive') return undefined;
  return owner;
}

/** Claims the journals in `dir` for this process; throws when another live process holds them. */
export function claimJournals(dir: string): void {
  const owner = journalOwner(dir);
  if (owner)
    throw new JournalsInUseError(
      `the queues in ${dir} are held by process ${owner.pid} (since ${owner.since}): is a toolrl train of this run ` +
        `still running? (if not, remove ${ownerFile(dir)})`,
    );
  const startTicks = processStartTicks('self');
  const me: JournalOwner = {
    pid: process.pid,
    host: hostname(),
    since: new Date().toISOString(),
    ...(startTicks !== undefined ? { startTicks } : {}),
  };
  writeFileSync(ownerFile(dir), `${JSON.stringify(me)}\n`);
}

/** Gives the claim up (only this process's own). */
export function releaseJournals(dir: string): void {
  const owner = readJournalClaim(dir);
  if (owner && owner.pid === process.pid && owner.host === hostname())
    rmSync(ownerFile(dir), { force: true });
}
