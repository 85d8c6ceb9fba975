// `toolrl status --workdir` on an embedded run whose process is gone: run.json still says running (a killed process
// writes nothing), so the report says `interrupted`, with the command that resumes it. The process is the one that
// claims the run's queue journals (pid, host, start time), so a pid the system gave to another process since does
// not pass for it.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { claimJournals, processStartTicks, releaseJournals } from '#shared/adapters/embedded/journal-owner';
import { embeddedJournalDir, embeddedRunReport } from '#shared/operator/embedded-report';
import { formatRunReport } from '#shared/operator/run-report';
import { putJson } from '#shared/pipeline/blob-json';
import { resumeCommand, writeResumeCommand } from '#shared/runtime/run-process';
import { keys } from '#shared/topology';
import { bareRunStatus } from '../../helpers/run-status.ts';

async function runIn(status: 'running' | 'completed' = 'running') {
  const workdir = mkdtempSync(join(tmpdir(), 'toolrl-process-'));
  await putJson(new FolderBlobStore(workdir), keys.runJson('r-1'), bareRunStatus('r-1', status));
  const journals = embeddedJournalDir(workdir, 'r-1');
  mkdirSync(journals, { recursive: true });
  return { workdir, journals, runDir: join(workdir, 'runs', 'r-1') };
}

describe('an embedded run whose toolrl train is gone', () => {
  it('is running while a live process holds its queues, interrupted with the resume command once none does', async () => {
    const { workdir, journals, runDir } = await runIn();
    const command = resumeCommand({
      configPath: '/home/me/my run.yaml',
      overrides: ['trainer.lr=1e-4'],
      workdir,
      runId: 'r-1',
      maxSteps: 16,
    });
    expect(command).toBe(
      `toolrl train '/home/me/my run.yaml' trainer.lr=1e-4 --max-steps 16 --workdir ${workdir} --resume r-1`,
    );
    writeResumeCommand(runDir, command);

    claimJournals(journals); // this process runs it
    expect(await embeddedRunReport(workdir, 'r-1')).toMatchObject({
      status: 'running',
      process: { pid: process.pid, host: hostname() },
      resumeCommand: null,
    });

    releaseJournals(journals); // it stopped (Ctrl-C, SIGTERM): the claim is given up
    const stopped = await embeddedRunReport(workdir, 'r-1');
    expect(stopped).toMatchObject({ status: 'interrupted', resumeCommand: command, process: null });
    expect(formatRunReport(stopped)).toContain(`resume    ${command}`);

    // killed (SIGKILL): the claim stays, naming a pid no process has
    writeFileSync(
      join(journals, 'owner.json'),
      JSON.stringify({ pid: 4_194_305, host: hostname(), since: 'then' }),
    );
    const killed = await embeddedRunReport(workdir, 'r-1');
    expect(killed.status).toBe('interrupted');
    expect(killed.reason).toBe(
      `run.json says running, but no toolrl train runs it: its process (pid 4194305 on ${hostname()}, started then) has stopped or was killed`,
    );
  });

  it.skipIf(processStartTicks(1) === undefined)(
    'a claim whose pid now belongs to a process started at another time is gone',
    async () => {
      const { workdir, journals } = await runIn();
      const write = (startTicks: number) =>
        writeFileSync(
          join(journals, 'owner.json'),
          JSON.stringify({ pid: 1, host: hostname(), since: 'then', startTicks }),
        );
      write(processStartTicks(1)!);
      expect((await embeddedRunReport(workdir, 'r-1')).status).toBe('running');
      write(processStartTicks(1)! + 1);
      expect((await embeddedRunReport(workdir, 'r-1')).status).toBe('interrupted');
    },
  );

  it('a claim from another host cannot be checked here: the run is reported as run.json says', async () => {
    const { workdir, journals } = await runIn();
    writeFileSync(
      join(journals, 'owner.json'),
      JSON.stringify({ pid: 4_194_305, host: 'elsewhere', since: 'then' }),
    );
    expect(await embeddedRunReport(workdir, 'r-1')).toMatchObject({ status: 'running', resumeCommand: null });
  });

  it('an ended run is reported as it ended, with or without its process', async () => {
    const { workdir } = await runIn('completed');
    expect(await embeddedRunReport(workdir, 'r-1')).toMatchObject({
      status: 'completed',
      resumeCommand: null,
    });
  });
});
