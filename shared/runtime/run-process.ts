// Whether a `toolrl train` process runs an embedded run, for `toolrl status`. run.json says what the run is
// (`running` until it completes or fails) and cannot say that its process was killed: a process killed with
// SIGKILL writes nothing. The process is the one that claims the run's queue journals (runs/<id>/queues/owner.json:
// pid, host, start time; adapters/embedded/journal-owner.ts), released when it exits, so a running run with no
// live claim has been interrupted; `runs/<id>/resume.json` keeps the command that continues it.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { claimState, type JournalOwner, readJournalClaim } from '#shared/adapters/embedded/journal-owner';

/** Where an embedded run keeps its queue journals (EmbeddedPipeline's default; operator/embedded-report.ts too). */
const journalDirOf = (runDir: string): string => join(runDir, 'queues');

const ResumeSchema = z.object({ command: z.string(), writtenAt: z.string() });
const resumeFile = (runDir: string) => join(runDir, 'resume.json');

/** Records the command that resumes the run (written by every `toolrl train` of it, fresh or resumed). */
export function writeResumeCommand(runDir: string, command: string): void {
  writeFileSync(
    resumeFile(runDir),
    `${JSON.stringify({ command, writtenAt: new Date().toISOString() }, null, 1)}\n`,
  );
}

export function readResumeCommand(runDir: string): string | undefined {
  try {
    return ResumeSchema.parse(JSON.parse(readFileSync(resumeFile(runDir), 'utf8'))).command;
  } catch {
    return undefined;
  }
}

export interface RunProcess {
  /** `alive`: a process holds the run; `gone`: none does (its process exited or was killed); `elsewhere`: the
   * claim was made on another host, which cannot be checked from here. */
  readonly state: 'alive' | 'gone' | 'elsewhere';
  /** The last claim (the process's pid, host, start), if one is on file. */
  readonly owner: JournalOwner | undefined;
}

export function runProcess(runDir: string): RunProcess {
  const owner = readJournalClaim(journalDirOf(runDir));
  return { state: owner ? claimState(owner) : 'gone', owner };
}

/** A word for the shell: quoted when it holds anything but safe characters. */
export const shellWord = (w: string): string =>
  /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", `'\\''`)}'`;

/** The `toolrl train` command line that resumes a run (printed at an interrupt, kept in resume.json). */
export function resumeCommand(o: {
  readonly configPath: string;
  readonly overrides?: readonly string[];
  readonly workdir: string;
  readonly runId: string;
  readonly maxSteps?: number;
  readonly learnerDevice?: string;
}): string {
  return [
    'toolrl',
    'train',
    o.configPath,
    ...(o.overrides ?? []),
    ...(o.maxSteps !== undefined ? ['--max-steps', String(o.maxSteps)] : []),
    ...(o.learnerDevice ? ['--learner-device', o.learnerDevice] : []),
    '--workdir',
    o.workdir,
    '--resume',
    o.runId,
  ]
    .map(shellWord)
    .join(' ');
}
