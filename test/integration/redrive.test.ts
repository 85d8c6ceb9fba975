// `toolrl status` and `toolrl redrive` on an embedded run, as a user meets them: a judge whose service is down for
// one question dead-letters that group's reward messages; `toolrl status --workdir` shows them by stage with the
// reason; once the service is back, `toolrl redrive --workdir` sends them back (through the running `toolrl
// train`, which holds the queues) and the real learner trains every group. The learner is held with SIGSTOP
// meanwhile, so it cannot end the run before the fix; a stopped run's queues are redriven from their journals.
import { spawn } from 'node:child_process';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { createEmbeddedQueues } from '#shared/adapters/embedded/queues';
import { embeddedJournalDir, embeddedRunReport } from '#shared/operator/embedded-report';
import type { RunReport } from '#shared/operator/run-report';
import { putJson } from '#shared/pipeline/blob-json';
import { listDeadLetters } from '#shared/pipeline/dead-letters';
import { redriveRun } from '#shared/pipeline/redrive';
import type { EmbeddedPipeline } from '#shared/runtime/embedded';
import { train } from '#shared/runtime/train';
import { keys } from '#shared/topology';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { bareRunStatus } from '../helpers/run-status.ts';
import { until } from './helpers/pipeline-fixture.ts';
import { quickstartRows, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const run = tinyRun('redrive');
afterAll(() => run.close());

/** The CLI as a user runs it, without blocking this process (whose pipeline answers the redrive request). */
function toolrl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/toolrl.mjs'), ...args], { cwd: REPO_ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('toolrl status and toolrl redrive (embedded run, real learner)', () => {
  it('shows the dead letters by stage and reason; after the fix a redrive brings the group back and every group is trained', async () => {
    // GIVEN 3 questions and a judge whose service is down for the first one (while a file says so)
    const rows = (await quickstartRows('train')).slice(0, 3);
    run.dataset('train.parquet', rows);
    const down = join(run.dir, 'judge-down');
    writeFileSync(down, '');
    writeFileSync(
      join(run.dir, 'judge.ts'),
      "import { existsSync } from 'node:fs';\nexport const rewards = {\n  judge: (input) => {\n" +
        `    if (existsSync(${JSON.stringify(down)}) && JSON.stringify(input.groundTruth) === ${JSON.stringify(JSON.stringify(rows[0]!.reward_model.ground_truth))})\n` +
        "      throw new Error('the judge service is down');\n    return input.turns.length > 0 ? 0.5 : 0;\n  },\n};\n",
    );
    const configPath = join(run.dir, 'run.yaml');
    writeFileSync(
      configPath,
      toYaml(
        tinyConfig({
          reward: { modules: ['judge.ts'], functions: [{ name: 'judge' }] },
          trainer: { max_dead_letter_fraction: 0.5 },
        }),
      ),
    );
    const workdir = join(run.dir, 'work');
    let pipeline: EmbeddedPipeline | undefined;
    let published = false;
    const trained = train({
      configPath,
      workdir,
      runId: 'redrive-run',
      ortThreads: 1,
      onPipeline: (p) => {
        pipeline = p;
      },
      onEvent: (e) => {
        if (e.kind === 'learner' && e.line.type === 'published') published = true;
      },
    });
    const blobs = new FolderBlobStore(workdir);
    // the learner is held once it has published v0 (the first groups are then rolled out and scored without it)
    await until(() => published, 'policy v0');
    const learnerPid = pipeline!.learner!.pid!;
    process.kill(learnerPid, 'SIGSTOP');
    try {
      // WHEN the first question's two reward messages fail five times each
      await until(() => pipeline!.queues.dlqs.reward.size === 2, 'two dead-lettered reward messages');

      // THEN `toolrl status` shows them by stage, with the reason and the command that sends them back
      const json = await toolrl(['status', 'redrive-run', '--workdir', workdir, '--json']);
      expect(json.code, json.stderr).toBe(0);
      const report = JSON.parse(json.stdout) as RunReport;
      expect(report.status).toBe('running');
      expect(report.deadLetters.groups).toEqual({ train: 1, val: 0 });
      expect(report.deadLetters.stages.reward).toEqual({
        messages: 2,
        groups: 1,
        reasons: [
          { reason: 'Error: reward judge failed: the judge service is down (after 5 attempts)', count: 2 },
        ],
      });
      expect(report.queues.reward.deadLetters).toBe(2);
      const text = await toolrl(['status', 'redrive-run', '--workdir', workdir]);
      expect(text.stdout).toContain(
        'reward: 2 messages of 1 group: Error: reward judge failed: the judge service is down (after 5 attempts) (x2)',
      );
      expect(text.stdout).toContain(`(after a fix: toolrl redrive redrive-run --workdir ${workdir})`);

      // WHEN the judge is back and the run's dead letters are sent back (the running train does it)
      rmSync(down);
      const redrive = await toolrl(['redrive', 'redrive-run', '--workdir', workdir]);
      expect(redrive.code, redrive.stderr).toBe(0);
      expect(redrive.stdout).toBe(
        'run redrive-run: sent back reward 2; 2 dead-letter records moved to redriven/\n',
      );
    } finally {
      process.kill(learnerPid, 'SIGCONT');
    }

    // THEN the run completes with all three groups trained and none dropped; the records are history now
    const result = await trained;
    expect(result.status, result.reason ?? '').toBe('completed');
    expect(result.learner).toMatchObject({ groupsConsumed: 3, groupsDropped: 0, done: true });
    expect(await listDeadLetters(blobs, 'redrive-run')).toEqual([]);
    expect(await blobs.listKeys(keys.redriven('redrive-run'))).toHaveLength(2);
    expect(await embeddedRunReport(workdir, 'redrive-run')).toMatchObject({
      redriven: 2,
      deadLetters: { groups: { train: 0, val: 0 } },
    });
    // and an ended run is not redriven: nothing would train its groups
    await expect(redriveRun(blobs, pipeline!.queues, 'redrive-run')).rejects.toThrow(
      'run redrive-run is completed: nothing would train its groups any more',
    );
  });

  it('redrives a stopped run from its queue journals, and refuses while another live process holds them', async () => {
    // GIVEN a run (run.json says running) whose reward dead-letter queue holds one of its messages and one of another run
    const workdir = join(run.dir, 'stopped');
    const blobs = new FolderBlobStore(workdir);
    const group = (runId: string) => ({
      runId,
      groupId: 'e0-p0',
      promptId: 'p0',
      epoch: 0,
      stage: null,
      split: 'train',
      dataSource: 'calc',
      groupSize: 2,
      policyVersion: null,
    });
    await putJson(blobs, keys.runJson('stopped-run'), bareRunStatus('stopped-run', 'running', 10));
    const dir = embeddedJournalDir(workdir, 'stopped-run');
    const q = createEmbeddedQueues({ journalDir: dir });
    q.dlqs.reward.sendSync(JSON.stringify({ trajectory: { group: group('stopped-run'), sampleIndex: 0 } }));
    q.dlqs.reward.sendSync(JSON.stringify({ trajectory: { group: group('other-run'), sampleIndex: 0 } }));
    await q.close();
    await putJson(blobs, keys.deadLetter('stopped-run', 'e0-p0', 'reward', 'm-1'), {
      schemaVersion: 1,
      runId: 'stopped-run',
      groupId: 'e0-p0',
      split: 'train',
      stage: 'reward',
      sampleIndex: 0,
      messageId: 'm-1',
      reason: 'Error: boom (after 5 attempts)',
      receiveCount: 5,
      deadLetteredAt: new Date().toISOString(),
    });

    // WHEN another live process held them, a second process could not open them (its writes would be lost)
    writeFileSync(join(dir, 'owner.json'), JSON.stringify({ pid: 1, host: hostname(), since: 'then' }));
    expect(() => createEmbeddedQueues({ journalDir: dir })).toThrow(
      /the queues in .* are held by process 1 \(since then\): is a toolrl train of this run still running\?/,
    );
    rmSync(join(dir, 'owner.json'));

    // WHEN no process holds them
    const r = await toolrl(['redrive', 'stopped-run', '--workdir', workdir, '--json']);

    // THEN only this run's message went back to the reward queue; the other run's stays dead-lettered
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      runId: 'stopped-run',
      moved: { reward: 1 },
      recordsRedriven: 1,
      recordsWithoutMessage: 0,
    });
    const after = createEmbeddedQueues({ journalDir: dir });
    try {
      expect(after.queues.reward.browse().map((m) => JSON.parse(m.body).trajectory.group.runId)).toEqual([
        'stopped-run',
      ]);
      expect(after.dlqs.reward.browse().map((m) => JSON.parse(m.body).trajectory.group.runId)).toEqual([
        'other-run',
      ]);
    } finally {
      await after.close();
    }
    expect(existsSync(join(dir, 'owner.json'))).toBe(false);
  });
});
