import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type BorrowRun,
  geometricMean,
  learningDiffers,
  readBorrowRun,
  renderBorrowReport,
  type TimedRun,
} from '../../../bench/embedded/borrow-report.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A run folder as `toolrl train` leaves it: pipeline.log, metrics.jsonl, metrics/eval/v<N>.json. */
function runFolder(log: object[], steps: object[], evals: object[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'borrow-'));
  dirs.push(dir);
  mkdirSync(join(dir, 'metrics', 'eval'), { recursive: true });
  writeFileSync(join(dir, 'pipeline.log'), log.map((l) => `${JSON.stringify(l)}\n`).join(''));
  writeFileSync(join(dir, 'metrics', 'metrics.jsonl'), steps.map((s) => `${JSON.stringify(s)}\n`).join(''));
  for (const e of evals)
    writeFileSync(
      join(dir, 'metrics', 'eval', `v${(e as { policyVersion: number }).policyVersion}.json`),
      JSON.stringify(e),
    );
  return dir;
}

const evalAt = (v: number, accuracy: number, at: string) => ({
  policyVersion: v,
  accuracy,
  passAtK: accuracy,
  samplesPerPrompt: 4,
  rewardMean: accuracy / 2,
  toolCallsPerTrajectory: 1,
  accuracyComponent: 'toolcall/final_answer',
  createdAt: at,
});

describe('readBorrowRun', () => {
  it("reads the learner's ready time, the decoder passes, the learner's waiting and the validations", () => {
    const dir = runFolder(
      [
        { time: '2026-12-02T10:00:00.000Z', level: 'info', message: 'learner spawned' },
        { time: '2026-12-02T10:03:00.500Z', level: 'info', message: 'learner ready', version: 0 },
        {
          time: '2026-12-02T10:20:00.000Z',
          level: 'info',
          message: 'rollout decoder passes',
          halfCores: 30,
          allCores: 12,
          differed: false,
        },
      ],
      [{ step: 1, 'timing_s/wait': 4.5 }, { step: 2 }, { step: 3, 'timing_s/wait': 1.5 }],
      [evalAt(8, 0.5, '2026-12-02T10:15:00Z'), evalAt(0, 0.25, '2026-12-02T10:05:00Z')],
    );
    const r = readBorrowRun(dir);
    expect(r.readyAt).toBe(Date.parse('2026-12-02T10:03:00.500Z'));
    expect(r.passes).toEqual({ halfCores: 30, allCores: 12, differed: false });
    expect(r.learnerWaitS).toBe(6);
    expect(r.steps).toBe(3);
    expect(r.evals.map((e) => e.policyVersion)).toEqual([0, 8]);
  });

  it('names the log when the learner never got ready, and has no passes when none were logged', () => {
    const notReady = runFolder(
      [{ time: '2026-12-02T10:00:00Z', level: 'info', message: 'learner spawned' }],
      [{}],
      [],
    );
    expect(() => readBorrowRun(notReady)).toThrow(/pipeline\.log: no 'learner ready' line/);
    const quiet = runFolder(
      [{ time: '2026-12-02T10:00:00Z', level: 'info', message: 'learner ready' }],
      [{ step: 1 }],
      [evalAt(0, 0.25, '2026-12-02T10:05:00Z')],
    );
    expect(readBorrowRun(quiet).passes).toBeNull();
  });
});

const run = (over: Partial<TimedRun> = {}): TimedRun => ({
  readyAt: 0,
  passes: { halfCores: 10, allCores: 5, differed: false },
  learnerWaitS: 3,
  steps: 2,
  evals: [evalAt(0, 0.25, '2026-12-02T10:05:00Z'), evalAt(2, 0.75, '2026-12-02T10:09:00Z')].map((e) => ({
    ...e,
    at: Date.parse(e.createdAt),
  })),
  totalS: 100,
  rlS: 80,
  ...over,
});

describe('learningDiffers', () => {
  it('is null for runs that validated alike, and names the first difference otherwise', () => {
    const a: BorrowRun = run();
    expect(learningDiffers(a, run({ totalS: 120 }))).toBeNull();
    const other = run();
    const changed = { ...other, evals: [other.evals[0]!, { ...other.evals[1]!, accuracy: 0.7 }] };
    expect(learningDiffers(a, changed)).toBe('v2 accuracy 0.75 against 0.7');
    expect(learningDiffers(a, run({ steps: 3 }))).toBe('2 learner steps against 3');
    expect(learningDiffers(a, { ...other, evals: other.evals.slice(0, 1) })).toBe(
      'validated versions 0,2 against 0',
    );
  });
});

describe('renderBorrowReport', () => {
  it('gives each ratio as fixed over lending with their geometric mean, and says when validation differed', () => {
    expect(geometricMean([2, 0.5])).toBeCloseTo(1, 12);
    const text = renderBorrowReport({
      command: 'npx tsx bench/embedded/borrow.ts --pairs 2',
      threads: 1,
      cpu: 'CPU, 2 cores',
      load: [1.2, 2.4],
      pairs: [
        { lending: run({ rlS: 80, totalS: 100 }), fixed: run({ rlS: 100, totalS: 120 }), lendingFirst: true },
        { lending: run({ rlS: 50, totalS: 90 }), fixed: run({ rlS: 80, totalS: 99 }), lendingFirst: false },
      ],
    });
    expect(text).toContain('RL stage, fixed / lending: 1.250, 1.600 (geometric mean **1.414**)');
    expect(text).toContain('whole command: 1.200, 1.100 (geometric mean 1.149)');
    expect(text).toContain('Each pair validated alike');
    const rows = text.split('\n').filter((l) => l.startsWith('| 2 |'));
    expect(rows[0]).toContain('(--threads)'); // the second pair ran the fixed count first
    expect(rows[1]).toContain('5 of 15');
    const broken = renderBorrowReport({
      command: 'x',
      threads: 1,
      cpu: 'CPU',
      load: [1],
      pairs: [{ lending: run(), fixed: run({ steps: 1 }), lendingFirst: true }],
    });
    expect(broken).toContain('Validation differed: pair 1: 2 learner steps against 1.');
  });
});
