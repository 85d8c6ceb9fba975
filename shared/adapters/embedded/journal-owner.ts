// Which process holds a run's queue journals. Only that process may touch them (its queues live in its memory; a
// second writer would be lost at its next compaction), so `toolrl train --resume` and `toolrl redrive` check the
// owner first: a live one is asked (redrive) or refused (a second train), a dead one's claim is taken over.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';

const OwnerSchema = z.object({ pid: z.number().int().positive(), host: z.string(), since: z.string() });
export type JournalOwner = z.infer<typeof OwnerSchema>;

const ownerFile = (dir: string) => join(dir, 'owner.json');

export class JournalsInUseError extends Error {
  override name = 'JournalsInUseError';
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // alive, another user's
  }
}

/** The live process (on this host) that holds the journals in `dir`, other than this one; undefined when none. */
export function journalOwner(dir: string): JournalOwner | undefined {
  let owner: JournalOwner;
  try {
    owner = OwnerSchema.parse(JSON.parse(readFileSync(ownerFile(dir), 'utf8')));
  } catch {
    return undefined; // none, or unreadable (a crash mid-write): nobody holds them
  }
  if (owner.pid === process.pid || owner.host !== hostname() || !alive(owner.pid)) return undefined;
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
  const me: JournalOwner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
  writeFileSync(ownerFile(dir), `${JSON.stringify(me)}\n`);
}

/** Gives the claim up (only this process's own). */
export function releaseJournals(dir: string): void {
  try {
    const owner = OwnerSchema.parse(JSON.parse(readFileSync(ownerFile(dir), 'utf8')));
    if (owner.pid === process.pid && owner.host === hostname()) rmSync(ownerFile(dir), { force: true });
  } catch {
    // nothing to give up
  }
}
