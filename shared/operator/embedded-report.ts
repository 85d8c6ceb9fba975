// `toolrl status --workdir DIR`: an embedded run's report from its folder. The queues are counted from their
// journals, read only (the `toolrl train` that may hold them keeps writing), so the count is of messages not yet
// deleted: waiting and in flight alike. A run that run.json calls running whose `toolrl train` is gone is reported
// `interrupted`, with the command that resumes it (runtime/run-process.ts).
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { QueueJournal } from '#shared/adapters/embedded/queue-journal';
import { readResumeCommand, runProcess, shellWord } from '#shared/runtime/run-process';
import { dlqName, keys, QUEUES, type QueueName } from '#shared/topology';
import { type QueueReport, type RunReport, reportOf } from './run-report.ts';

/** Where an embedded run keeps its queue journals (EmbeddedPipeline's default). */
export const embeddedJournalDir = (workdir: string, runId: string): string =>
  join(resolve(workdir), 'runs', runId, 'queues');

export async function embeddedRunReport(workdir: string, runId: string): Promise<RunReport> {
  const blobs = new FolderBlobStore(resolve(workdir));
  const dir = embeddedJournalDir(workdir, runId);
  const count = (name: string) => QueueJournal.read(join(dir, `${name}.jsonl`)).length;
  const queues = Object.fromEntries(
    (Object.keys(QUEUES) as QueueName[]).map((q): [QueueName, QueueReport] => [
      q,
      { visible: count(q), inFlight: 0, delayed: 0, deadLetters: count(dlqName(q)) },
    ]),
  ) as Record<QueueName, QueueReport>;
  const runDir = join(resolve(workdir), keys.runPrefix(runId));
  const report = await reportOf(
    blobs,
    runId,
    Promise.resolve(queues),
    { env: 'embedded', bucket: '', runDir },
    async () =>
      existsSync(runDir)
        ? `${runDir} has no run.json: its dataset was never handled`
        : `there is no run ${runId} in ${resolve(workdir)} (no ${runDir})`,
  );
  const proc = runProcess(runDir);
  const holder = proc.owner ? { pid: proc.owner.pid, host: proc.owner.host, since: proc.owner.since } : null;
  if ((report.status !== 'running' && report.status !== 'starting') || proc.state !== 'gone')
    return { ...report, process: holder };
  const last = proc.owner
    ? ` (pid ${proc.owner.pid} on ${proc.owner.host}, started ${proc.owner.since})`
    : '';
  return {
    ...report,
    status: 'interrupted',
    reason: `run.json says ${report.status}, but no toolrl train runs it: its process${last} has stopped or was killed`,
    process: holder,
    resumeCommand:
      readResumeCommand(runDir) ??
      `toolrl train CONFIG --workdir ${shellWord(resolve(workdir))} --resume ${shellWord(runId)}`,
  };
}
