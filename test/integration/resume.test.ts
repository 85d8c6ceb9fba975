// `toolrl train --resume` after a kill, as a user meets it: the real CLI in a process of its own, killed at
// observable points of a run (helpers/train-process.ts: the run is frozen, the point checked on the frozen files,
// then the signal sent) and resumed until it completes.
//
// Deterministic mode: one run killed five times (SIGKILL during the SFT warm start, SIGKILL just after a publish
// past its last checkpoint, SIGKILL while a validation is in flight, SIGTERM to the process, SIGINT to its process
// group as Ctrl-C sends it) ends with the same metrics, step by step, and the same validation numbers at the same
// versions as the same config run straight through. After each kill nothing of it lives on (the learner dies with
// it) and `toolrl status` calls the run interrupted, with the command that resumes it. Asynchronous mode: killed
// once groups sampled by versions past its checkpoint are scored, and resumed, every planned group is settled
// (trained, or dropped by the run's own rules) exactly once, and none of those groups is stale for the weights
// the resume puts out (staleness counts along the learner's lineage). A resumed run that cannot make progress
// (a group lost from every queue) fails with the reason instead of waiting.
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { writeDataset } from '#shared/data/dataset';
import { embeddedRunReport } from '#shared/operator/embedded-report';
import { train } from '#shared/runtime/train';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { quickstartRows, tinyConfig } from './helpers/tiny-run.ts';
import {
  groupGone,
  RunFiles,
  signalWhen,
  startTrain,
  type TrainProcess,
  waitUntil,
} from './helpers/train-process.ts';

const dir = mkdtempSync(join(tmpdir(), 'toolrl-resume-'));
// KEEP_RESUME_DIR=<folder>: the runs are copied there (the suite's temp folder is removed when it ends).
afterAll(() => {
  const keep = process.env.KEEP_RESUME_DIR;
  if (keep) cpSync(dir, keep, { recursive: true });
  rmSync(dir, { recursive: true, force: true });
});

const STEPS = 20; // 40 questions, 2 per step

async function writeRun(name: string, deterministic: boolean): Promise<string> {
  const at = join(dir, name);
  const train = (await quickstartRows('train')).slice(0, 2 * STEPS);
  const val = (await quickstartRows('val')).slice(0, 8);
  mkdirSync(at, { recursive: true });
  writeDataset(join(at, 'train.parquet'), train);
  writeDataset(join(at, 'val.parquet'), val);
  copyFileSync(join(REPO_ROOT, 'examples', 'quickstart', 'data', 'sft.parquet'), join(at, 'sft.parquet'));
  const base = tinyConfig();
  const [calculator] = (base.tools as { tools: Record<string, unknown>[] }).tools;
  const config = tinyConfig({
    data: { val: 'val.parquet' },
    // No wall-clock limit a loaded machine could trip: a calculator call cut at its default 1 s would make the
    // run's tokens depend on the load, in the straight run and the killed one alike.
    tools: { tools: [{ ...calculator, config: { max_eval_ms: 600_000, timeout: 600 } }] },
    rollout: { n: 2, val_kwargs: { n: 2, temperature: 1.0 } },
    trainer: {
      batch_prompts: 2,
      max_staleness: 1,
      publish_every: 1,
      save_every: 3,
      eval_every: 4,
      deterministic,
      seed: 0,
      sft: { data: 'sft.parquet', steps: 60, lr: 5.0e-3, batch_size: 8 },
    },
  });
  writeFileSync(join(at, 'run.yaml'), toYaml(config));
  return join(at, 'run.yaml');
}

/** The learner's numbers, step by step, without the clock's (timings, throughput, memory) or the resume's own
 * bookkeeping (redelivered groups it had committed are counted as duplicates). */
function stepNumbers(rows: Record<string, number | null>[]): Record<string, number | null>[] {
  const clock = (k: string) =>
    k.startsWith('timing_s/') || ['step_time_s', 'tokens_per_s', 'memory_gb', 'duplicate_groups'].includes(k);
  return rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !clock(k))));
}

/** A validation summary's numbers (not its run's id or when it was written). */
function evalNumbers(evals: Map<number, Record<string, unknown>>): Record<number, unknown> {
  return Object.fromEntries([...evals].map(([v, { createdAt: _, runId: __, ...numbers }]) => [v, numbers]));
}

async function killed(p: TrainProcess, workdir: string, runId: string, signal: NodeJS.Signals) {
  const exit = await p.exited;
  if (signal === 'SIGKILL') expect(exit.signal).toBe('SIGKILL');
  else expect(exit.code, p.stderr().slice(-2000)).toBe(130); // stopped cleanly, "interrupted"
  // nothing of it lives on: the learner died with it
  await groupGone(p.child.pid!);
  const report = await embeddedRunReport(workdir, runId);
  expect(report.status).toBe('interrupted');
  expect(report.resumeCommand).toContain(`--workdir ${workdir} --resume ${runId}`);
}

describe('toolrl train --resume after a kill', () => {
  it('deterministic: killed five times (warm start, past a checkpoint, validation, SIGTERM, SIGINT), it ends as the straight run', async () => {
    // GIVEN a deterministic run of 20 steps (a checkpoint every 3, validation every 4 versions), run straight
    const configPath = await writeRun('deterministic', true);
    const straightDir = join(dir, 'straight');
    const straight = startTrain(configPath, straightDir);
    expect((await straight.exited).code, straight.stderr().slice(-3000)).toBe(0);
    const ref = RunFiles.of(straightDir)!;

    const workdir = join(dir, 'killed');
    // WHEN the same config is killed during the SFT warm start (before v0)
    let p = startTrain(configPath, workdir);
    await waitUntil(p, () => RunFiles.of(workdir) !== undefined, 'the run folder');
    const run = RunFiles.of(workdir)!;
    const id = run.runId;
    await signalWhen(
      p,
      () => run.text('learner.log').includes('"sft_step": 3,') && run.latest() === -1,
      'the warm start under way',
      'SIGKILL',
    );
    await killed(p, workdir, id, 'SIGKILL');
    expect(run.latest()).toBe(-1);
    expect(run.status()).toBe('running'); // run.json cannot know; `toolrl status` does:
    const status = spawnSync(
      process.execPath,
      [join(REPO_ROOT, 'bin', 'toolrl.mjs'), 'status', id, '--workdir', workdir],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    expect(status.stdout).toMatch(
      /^status {4}interrupted: run\.json says running, but no toolrl train runs it/m,
    );
    expect(status.stdout).toContain(
      `resume    toolrl train ${configPath} --workdir ${workdir} --resume ${id}`,
    );
    expect(status.status).toBe(1);

    // ... then resumed and killed just after a publish past its last checkpoint (versions the checkpoint lacks)
    p = startTrain(configPath, workdir, id);
    const pastCheckpoint = () => {
      const ck = run.checkpoint();
      return ck.step >= 3 && run.latest() > ck.policy_version;
    };
    await signalWhen(p, pastCheckpoint, 'a version published past a checkpoint', 'SIGKILL');
    await killed(p, workdir, id, 'SIGKILL');
    expect(pastCheckpoint()).toBe(true);

    // ... then resumed and killed while a validation is in flight, after this life published a new version
    p = startTrain(configPath, workdir, id);
    let from = run.latest();
    await signalWhen(
      p,
      () => run.latest() > from && run.validationsInFlight().length > 0,
      'a validation in flight',
      'SIGKILL',
    );
    await killed(p, workdir, id, 'SIGKILL');
    expect(run.validationsInFlight().length).toBeGreaterThan(0);

    // ... then resumed and stopped with SIGTERM (`kill PID`), then with SIGINT to its group (Ctrl-C)
    for (const [signal, to] of [
      ['SIGTERM', 'process'],
      ['SIGINT', 'group'],
    ] as const) {
      p = startTrain(configPath, workdir, id);
      from = run.latest();
      await signalWhen(p, () => run.latest() > from, `a new version after ${from}`, signal, to);
      await killed(p, workdir, id, signal);
      expect(p.stderr()).toContain(
        `resume with: toolrl train ${configPath} --workdir ${workdir} --resume ${id}`,
      );
    }

    // ... and resumed once more, to the end
    p = startTrain(configPath, workdir, id);
    expect((await p.exited).code, p.stderr().slice(-3000)).toBe(0);

    // THEN it completed with the straight run's numbers: every step's, every validation's, the final state's
    expect(run.status()).toBe('completed');
    expect(run.metricsRows().map((r) => r.step)).toEqual(Array.from({ length: STEPS }, (_, i) => i + 1));
    expect(stepNumbers(run.metricsRows())).toEqual(stepNumbers(ref.metricsRows()));
    expect([...run.evals().keys()].sort((a, b) => a - b)).toEqual([0, 4, 8, 12, 16, 20]);
    expect(evalNumbers(run.evals())).toEqual(evalNumbers(ref.evals()));
    const state = (r: RunFiles) => {
      const { updatedAt: _, ...rest } = r.json('learner/state.json') ?? {};
      return rest;
    };
    expect(state(run)).toEqual(state(ref));
    expect(state(run)).toMatchObject({
      step: STEPS,
      policyVersion: STEPS,
      groupsConsumed: 2 * STEPS,
      done: true,
    });
  });

  it('asynchronous: killed after groups were sampled by versions past its checkpoint and resumed, every group is settled once and none of those goes stale for the lost versions', async () => {
    // GIVEN an asynchronous run of 20 steps killed once a group sampled by a version its last checkpoint lacks is
    // scored (a version the resumed learner will not have the weights of)
    const configPath = await writeRun('async', false);
    const workdir = join(dir, 'async-run');
    let p = startTrain(configPath, workdir);
    await waitUntil(p, () => RunFiles.of(workdir) !== undefined, 'the run folder');
    const run = RunFiles.of(workdir)!;
    await signalWhen(
      p,
      () => {
        const ck = run.checkpoint();
        return ck.step >= 3 && run.trainGroups().some((g) => g.oldest > ck.policy_version);
      },
      'a group sampled past a checkpoint',
      'SIGKILL',
    );
    await killed(p, workdir, run.runId, 'SIGKILL');
    const atKill = run.checkpoint().policy_version;
    const latestAtKill = run.latest();
    const orphaned = run
      .trainGroups()
      .filter((g) => g.oldest > atKill)
      .map((g) => g.groupId);
    expect(orphaned.length).toBeGreaterThan(0);

    // WHEN it is resumed
    p = startTrain(configPath, workdir, run.runId);
    expect((await p.exited).code, p.stderr().slice(-3000)).toBe(0);

    // THEN it completed, and its final checkpoint settled each of the 40 groups exactly once
    expect(run.status()).toBe('completed');
    const final = run.checkpoint() as unknown as {
      step: number;
      consumed_group_ids: string[];
      dropped_group_ids: string[];
      lineage: number[][];
    };
    const planned = Array.from({ length: 2 * STEPS }, (_, i) => `e0-p${i}`).sort();
    const settled = [...final.consumed_group_ids, ...final.dropped_group_ids];
    expect(new Set(settled).size).toBe(settled.length);
    expect(settled.sort()).toEqual(planned);
    // The resume put the checkpoint's weights out under a new number, anchored at the checkpoint's place in the
    // learner's lineage; staleness counts along it, so every group sampled by a version the killed learner published
    // past its checkpoint is fresh for those weights. Such a group is trained, or dropped as stale only later, by
    // the asynchronous mode's own rule (max_staleness 1) once the learner has stepped past it: in arrival order,
    // which timing decides, as in any asynchronous run. The learner's log says which group it dropped, and why.
    expect(final.lineage).toHaveLength(1);
    const [republished = -1, anchorIndex = -1] = final.lineage[0] ?? [];
    expect(republished).toBeGreaterThan(latestAtKill);
    expect(anchorIndex).toBe(atKill);
    const index = (v: number) => (v >= republished ? anchorIndex + v - republished : v);
    const drops = new Map(
      [...run.text('learner.log').matchAll(/dropped group (\S+) \((\w+)\): (.*)/g)].map((m) => [m[1]!, m]),
    );
    for (const id of orphaned.filter((g) => !final.consumed_group_ids.includes(g))) {
      const [, , reason, message] = drops.get(id) ?? [];
      expect(reason, `${id} was not trained: ${message}`).toBe('stale');
      const [, oldest = 0, behind, current = 0] =
        /\(v(\d+)\) is (\d+) versions behind v(\d+)/.exec(message ?? '')?.map(Number) ?? [];
      expect(current, `${id}: ${message}`).toBeGreaterThan(republished);
      expect(behind).toBe(index(current) - index(oldest));
      expect(behind).toBeGreaterThan(1);
    }
    // Each step's row once, and the rows count each trained group once
    const rows = run.metricsRows();
    expect(rows.map((r) => r.step)).toEqual(Array.from({ length: final.step }, (_, i) => i + 1));
    expect(rows.reduce((n, r) => n + (r.groups ?? 0), 0)).toBe(final.consumed_group_ids.length);
    expect(run.json('learner/state.json')).toMatchObject({
      groupsConsumed: final.consumed_group_ids.length,
      groupsDropped: final.dropped_group_ids.length,
      done: true,
    });
  });

  it('a resumed run that cannot make progress fails, naming what its learner waits for', async () => {
    // GIVEN a deterministic run killed after a publish past its checkpoint, whose first group past the checkpoint
    // is then lost from every queue (as a bug or a damaged disk could lose it): nothing will ever bring it
    const configPath = await writeRun('stall', true);
    const workdir = join(dir, 'stall-run');
    const p = startTrain(configPath, workdir);
    await waitUntil(p, () => RunFiles.of(workdir) !== undefined, 'the run folder');
    const run = RunFiles.of(workdir)!;
    await signalWhen(
      p,
      () => {
        const ck = run.checkpoint();
        return ck.step >= 3 && run.latest() > ck.policy_version;
      },
      'a version published past a checkpoint',
      'SIGKILL',
    );
    await killed(p, workdir, run.runId, 'SIGKILL');
    const position = 2 * (run.checkpoint() as unknown as { batches_settled: number }).batches_settled;
    const lost = `"groupId":"e0-p${position}"`;
    const queues = join(run.runDir, 'queues');
    for (const f of readdirSync(queues).filter((n) => n.endsWith('.jsonl'))) {
      const lines = readFileSync(join(queues, f), 'utf8').split('\n');
      const kept = lines.filter((l) => !l || !(JSON.parse(l) as { body?: string }).body?.includes(lost));
      writeFileSync(join(queues, f), kept.join('\n'));
    }

    // WHEN it is resumed (with a short watch, so the test need not wait the default 5 minutes)
    const result = await train({
      configPath,
      workdir,
      resume: run.runId,
      ortThreads: 1,
      stallLimitSec: 20,
    });

    // THEN it fails, saying the learner waits for that position and nothing in the pipeline can bring it
    expect(result.status).toBe('failed');
    expect(result.reason).toContain(
      'the run cannot make progress: the learner has waited for groups for 20 s',
    );
    expect(result.reason).toContain(`missing ${position}`);
    expect(result.reason).toContain('no queue held a message that could bring them');
  });

  it('a run killed while its inputs were uploaded (no run.json yet) resumes by uploading them again', async () => {
    // GIVEN a run folder holding only its config, as a kill right after the first upload leaves it
    const at = join(dir, 'early');
    mkdirSync(at, { recursive: true });
    writeDataset(join(at, 'train.parquet'), (await quickstartRows('train')).slice(0, 4));
    const configPath = join(at, 'run.yaml');
    writeFileSync(configPath, toYaml(tinyConfig({ trainer: { batch_prompts: 2 } })));
    const workdir = join(at, 'work');
    const input = join(workdir, 'runs', 'early-run', 'input');
    mkdirSync(input, { recursive: true });
    copyFileSync(configPath, join(input, 'config.yaml'));

    // WHEN it is resumed
    const result = await train({ configPath, workdir, resume: 'early-run', ortThreads: 1 });

    // THEN it runs from the start to the end
    expect(result.status, result.reason ?? '').toBe('completed');
    expect(result.learner).toMatchObject({ step: 2, groupsConsumed: 4, done: true });
  });
});
