// Validation bookkeeping: which versions get validation groups (every eval_every-th, none skipped when the
// learner outruns the feeder, and the final one), and the val/... metrics of a version's scored groups,
// overall and per data source, on hand-made groups whose numbers are worked out below; and which reward
// component each built-in reward reads as val/accuracy, alone and in weighted combinations.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { putJson } from '#shared/pipeline/blob-json';
import {
  accuracyComponentOf,
  type DeclaredAccuracy,
  EvalSummarySchema,
  summarise,
  toolCallValidity,
  valMetrics,
  wantedEvalVersions,
  writeEvalSummaryIfComplete,
} from '#shared/pipeline/eval';
import { silentLog } from '#shared/ports/log';
import { BUILTIN_REWARDS } from '#shared/rewards/registry';
import { RunConfigSchema } from '#shared/schemas/config/run';
import type { LearnerState } from '#shared/schemas/learner-stdio';
import type { RunStatus } from '#shared/schemas/run-status';
import type { ScoredGroup } from '#shared/schemas/scored-group';
import type { ToolErrorType } from '#shared/schemas/tool-result';
import { keys } from '#shared/topology';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

type Traj = ScoredGroup['trajectories'][number];

const call = (error: ToolErrorType | null) => ({
  name: 'calculator',
  arguments: { expression: '1 + 1' },
  result: {
    ok: error === null,
    output: error === null ? '2' : `error: ${error}`,
    error: error === null ? null : { type: error, message: error },
    truncated: false,
  },
  durationMs: 1,
});

function traj(
  reward: number,
  components: Record<string, number>,
  calls: ReturnType<typeof call>[],
  parseErrors = 0,
): Traj {
  return {
    sampleIndex: 0,
    tokenIds: [1, 2, 3],
    promptLength: 2,
    lossMask: [0, 0, 1],
    behaviorLogprobs: [0, 0, -1],
    policyVersions: [-1, -1, 0],
    finishReason: 'eos',
    turns: [
      {
        turn: 0,
        policyVersion: 0,
        text: '',
        content: '',
        toolCalls: calls,
        parseErrors: Array.from({ length: parseErrors }, () => ({ message: 'bad JSON' })),
        stop: 'eos',
        tokenStart: 2,
        tokenEnd: 3,
      },
    ],
    messages: [],
    reward,
    rewardComponents: components,
  };
}

const group = (id: string, dataSource: string, trajectories: Traj[]): ScoredGroup => ({
  schemaVersion: 1,
  runId: 'r',
  groupId: id,
  promptId: id,
  epoch: 0,
  stage: null,
  split: 'val',
  dataSource,
  trajectories,
});

// math: t1 tried 3 calls (one ran, one had invalid arguments, one did not parse) -> 1 valid of 3;
//       t2 made 1 well-formed call that timed out -> 1 valid of 1.
// qa:   t3 made no call.
const t1 = traj(1, { retool: 1, 'retool/correct': 1 }, [call(null), call('invalid_arguments')], 1);
const t2 = traj(-1, { retool: -1, 'retool/correct': 0 }, [call('timeout')]);
const t3 = traj(0.5, { retool: 0.5, 'retool/correct': 1 }, []);
const groups = [
  group('val-v0-p0', 'math', [t1]),
  group('val-v0-p1', 'qa', [t3]),
  group('val-v0-p2', 'math', [t2]),
];

describe('validation metrics', () => {
  it('reward mean, accuracy and tool-call validity, overall and per data source', () => {
    expect(valMetrics(groups, 'retool/correct')).toEqual({
      'val/reward_mean': (1 - 1 + 0.5) / 3, // 0.1667
      'val/accuracy': (1 + 0 + 1) / 3,
      'val/tool_call_validity': (1 + 1) / (3 + 1), // valid calls / attempted calls, malformed ones included
      'val/math/reward_mean': 0,
      'val/math/accuracy': 0.5,
      'val/math/tool_call_validity': 0.5,
      'val/qa/reward_mean': 0.5,
      'val/qa/accuracy': 1,
      'val/qa/tool_call_validity': null, // nothing attempted: not 1, not 0
    });
  });

  it('unknown tools and unparsable calls are invalid; failures of well-formed calls are not', () => {
    expect(toolCallValidity([traj(0, {}, [call('unknown_tool'), call('execution_error')])])).toBe(0.5);
    expect(toolCallValidity([traj(0, {}, [call('resource_limit'), call('http_error')])])).toBe(1);
    expect(toolCallValidity([traj(0, {}, [], 2)])).toBe(0);
  });

  it('the summary carries them, with accuracy null when the reward has no accuracy component', () => {
    const s = summarise('r', 0, groups, new Date(0), 'retool/correct');
    expect(s).toMatchObject({ accuracyComponent: 'retool/correct', trajectories: 3, prompts: 3 });
    expect(s.metrics['val/accuracy']).toBeCloseTo(2 / 3, 12);
    expect(s.metrics['val/reward_mean']).toBeCloseTo(s.rewardMean, 12);
    const noAccuracy = [group('val-v0-p0', 'qa', [traj(0.2, { format: 0.2 }, [call(null)])])];
    expect(summarise('r', 0, noAccuracy, new Date(0), null).metrics).toEqual({
      'val/reward_mean': 0.2,
      'val/accuracy': null,
      'val/tool_call_validity': 1,
      'val/qa/reward_mean': 0.2,
      'val/qa/accuracy': null,
      'val/qa/tool_call_validity': 1,
    });
  });
});

describe('mean@k and pass@k', () => {
  it('accuracy is the mean over every sample; pass@k counts prompts solved by at least one of their k samples', () => {
    // p0: samples solved 1, 0, 0, 0; p1: 0, 0, 0, 0; p2: 1, 1, 1, 1 -> mean@4 = 5/12, pass@4 = 2/3
    const solved = (ok: number) => traj(ok, { 'toolcall/final_answer': ok }, [call(null)]);
    const four = (...oks: number[]) => oks.map(solved);
    const s = summarise(
      'r',
      3,
      [
        group('val-v3-p0', 'calc', four(1, 0, 0, 0)),
        group('val-v3-p1', 'calc', four(0, 0, 0, 0)),
        group('val-v3-p2', 'calc', four(1, 1, 1, 1)),
      ],
      new Date(0),
      'toolcall/final_answer',
    );
    expect(s).toMatchObject({ samplesPerPrompt: 4, prompts: 3, trajectories: 12, toolCallValidity: 1 });
    expect(s.accuracy).toBeCloseTo(5 / 12, 12);
    expect(s.passAtK).toBeCloseTo(2 / 3, 12);
    // A partial accuracy component (0.5) is not a solved sample.
    const half = summarise(
      'r',
      0,
      [group('val-v0-p0', 'calc', [solved(0.5)])],
      new Date(0),
      'toolcall/final_answer',
    );
    expect(half.passAtK).toBe(0);
    expect(summarise('r', 0, groups, new Date(0), null).passAtK).toBeNull();
  });
});

describe('the accuracy component', () => {
  // The real declarations of the built-in rewards (RewardDefinition.accuracy).
  const builtin: DeclaredAccuracy = (name) => {
    const def = BUILTIN_REWARDS.find((d) => d.name === name);
    return def ? (def.accuracy ?? null) : undefined;
  };
  const of = (functions: { name: string; weight?: number }[], observed: string[] = []) =>
    accuracyComponentOf(
      { functions: functions.map((f) => ({ weight: 1, config: {}, ...f })) },
      builtin,
      observed,
    );

  it('each built-in reward names what "solved" means for its task', () => {
    expect(of([{ name: 'bfcl' }])).toBe('bfcl/success'); // all turns pass, not the per-turn progress
    expect(of([{ name: 'toolbench' }])).toBe('toolbench/finish'); // Finish with an answer
    expect(of([{ name: 'retool' }])).toBe('retool/correct');
    expect(of([{ name: 'toolcall' }])).toBe('toolcall/final_answer'); // not its call `correctness`
    expect(of([{ name: 'exact_match' }])).toBe('exact_match/exact_match');
    // `format` scores form: its final_answer (ended with some answer) is not accuracy
    expect(of([{ name: 'format' }], ['format/well_formed', 'format/final_answer'])).toBeNull();
  });

  it('in a weighted combination the weighted reward decides; a weight-0 one only when no other declares one', () => {
    // examples/bfcl: bfcl 1.0 + format 0.0 (logged) -> bfcl/success, where the old list picked format/final_answer
    expect(of([{ name: 'format', weight: 0 }, { name: 'bfcl' }])).toBe('bfcl/success');
    expect(of([{ name: 'bfcl' }, { name: 'format', weight: 0 }])).toBe('bfcl/success');
    // toolcall listed first but at weight 0: the run optimises retool, so retool/correct is its accuracy
    expect(of([{ name: 'toolcall', weight: 0 }, { name: 'retool' }])).toBe('retool/correct');
    // format optimised, exact_match at weight 0 only watched: it still gives the accuracy
    expect(of([{ name: 'format' }, { name: 'exact_match', weight: 0 }])).toBe('exact_match/exact_match');
    // two that declare one, both weighted: config order
    expect(
      of([
        { name: 'exact_match', weight: 0.5 },
        { name: 'retool', weight: 0.5 },
      ]),
    ).toBe('exact_match/exact_match');
  });

  it("a user module's reward (unknown here) is read by its component names; none matching gives null", () => {
    expect(of([{ name: 'format' }, { name: 'mine' }], ['mine/accuracy', 'format/final_answer'])).toBe(
      'mine/accuracy',
    );
    expect(of([{ name: 'mine' }], ['mine/similarity'])).toBeNull();
  });

  it('the stored summary of a BFCL run reads bfcl/success', async () => {
    const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-eval-')));
    const ctx = { blobs, queues: {}, log: silentLog, now: () => new Date(0) };
    const config = RunConfigSchema.parse({
      model: { path: 'tiny' },
      data: { train: 't.parquet', val: 'v.parquet' },
      reward: {
        functions: [
          { name: 'bfcl', weight: 1 },
          { name: 'format', weight: 0 },
        ],
      },
      trainer: { eval_every: 1 },
    });
    const run = {
      runId: 'r',
      config,
      totals: { groupsPlanned: 2, trainPrompts: 2, valPrompts: 2, epochs: 1 },
    } as RunStatus;
    // p0: 2 of 4 turns passed, answered every turn (format/final_answer 1); p1: all 4 passed.
    // accuracy = bfcl/success = (0 + 1) / 2 = 0.5, where format/final_answer would have read (1 + 1) / 2 = 1
    const scored = (success: number, progress: number) =>
      traj(
        progress,
        {
          bfcl: progress,
          'bfcl/progress': progress,
          'bfcl/success': success,
          format: 0.75,
          'format/final_answer': 1,
        },
        [],
      );
    await putJson(
      blobs,
      keys.group('r', 'val-v0-p0'),
      group('val-v0-p0', 'bfcl_multi_turn_base', [scored(0, 0.5)]),
    );
    expect(await writeEvalSummaryIfComplete(ctx, run, 0)).toBeUndefined(); // 1 of 2 groups in
    await putJson(
      blobs,
      keys.group('r', 'val-v0-p1'),
      group('val-v0-p1', 'bfcl_multi_turn_base', [scored(1, 1)]),
    );
    const s = EvalSummarySchema.parse(await writeEvalSummaryIfComplete(ctx, run, 0));
    expect(s.accuracyComponent).toBe('bfcl/success');
    expect(s.accuracy).toBe(0.5);
    expect(s.metrics['val/bfcl_multi_turn_base/accuracy']).toBe(0.5);
  });
});

describe('the validation summary, asked by the last groups at once', () => {
  it('is written once, each manifest read once, and returned to one caller only', async () => {
    // GIVEN a version's 8 validation manifests, all stored, and 8 reward records that each finished one of them
    const blobs = new FolderBlobStore(mkdtempSync(join(tmpdir(), 'toolrl-eval-once-')));
    const ctx = { blobs, queues: {}, log: silentLog, now: () => new Date(0) };
    const config = RunConfigSchema.parse({
      model: { path: 'tiny' },
      data: { train: 't.parquet', val: 'v.parquet' },
      reward: { functions: [{ name: 'retool' }] },
      trainer: { eval_every: 1 },
    });
    const run = {
      runId: 'r',
      config,
      totals: { groupsPlanned: 8, trainPrompts: 8, valPrompts: 8, epochs: 1 },
    } as RunStatus;
    for (let p = 0; p < 8; p++)
      await putJson(
        blobs,
        keys.group('r', `val-v3-p${p}`),
        group(`val-v3-p${p}`, 'calc', [traj(p % 2, { retool: p % 2, 'retool/correct': p % 2 }, [])]),
      );
    const gets: string[] = [];
    const get = blobs.get.bind(blobs);
    blobs.get = async (key: string) => {
      gets.push(key);
      return get(key);
    };
    const puts = vi.spyOn(blobs, 'putIfAbsent');
    // WHEN all 8 ask for the summary at once
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => writeEvalSummaryIfComplete(ctx, run, 3)),
    );
    // THEN one caller gets it (and goes on to complete the run), the manifests were read once, one put was made
    expect(answers.filter((a) => a !== undefined)).toHaveLength(1);
    expect(EvalSummarySchema.parse(answers.find((a) => a)).accuracy).toBe(0.5);
    expect(gets.filter((k) => k.includes('/groups/')).sort()).toEqual(
      Array.from({ length: 8 }, (_, p) => keys.group('r', `val-v3-p${p}`)).sort(),
    );
    expect(puts.mock.calls.map((c) => c[0])).toEqual([keys.evalSummary('r', 3)]);
    // AND a later caller (a redelivery) finds it written without reading the manifests again
    expect(await writeEvalSummaryIfComplete(ctx, run, 3)).toBeUndefined();
    expect(gets.filter((k) => k.includes('/groups/'))).toHaveLength(8);
  });
});

describe('versions to validate', () => {
  const run = (evalEvery: number, valPrompts = 3) =>
    ({
      config: RunConfigSchema.parse({
        model: { path: 'tiny' },
        data: { train: 't.parquet', val: 'v.parquet' },
        trainer: { eval_every: evalEvery },
      }),
      totals: { groupsPlanned: 10, trainPrompts: 10, valPrompts, epochs: 1 },
    }) as RunStatus;
  const done = (version: number) => ({ policyVersion: version, done: true }) as LearnerState;

  it('every eval_every-th version, catching up on those published between two feeder passes', () => {
    expect(wantedEvalVersions(run(2), 0, undefined, [])).toEqual([0]);
    expect(wantedEvalVersions(run(2), 1, undefined, [0])).toEqual([]);
    // v1..v5 published while the feeder was busy: v2 and v4 are still validated
    expect(wantedEvalVersions(run(2), 5, undefined, [0])).toEqual([2, 4]);
    expect(wantedEvalVersions(run(2), 5, undefined, [0, 2, 4])).toEqual([]);
  });

  it('the final version once the learner is done, once', () => {
    expect(wantedEvalVersions(run(2), 5, done(5), [0, 2, 4])).toEqual([5]);
    expect(wantedEvalVersions(run(2), 5, done(5), [0, 2, 4, 5])).toEqual([]);
    expect(wantedEvalVersions(run(1), 3, done(3), [0, 1, 2])).toEqual([3]);
  });

  it('a first pass that never saw v0 does not backfill from it', () => {
    expect(wantedEvalVersions(run(2), 5, done(5), [])).toEqual([5]);
    expect(wantedEvalVersions(run(2), 4, undefined, [])).toEqual([4]);
  });

  it('nothing without eval_every or a validation set', () => {
    expect(wantedEvalVersions(run(0), 4, done(4), [])).toEqual([]);
    expect(wantedEvalVersions(run(2, 0), 4, done(4), [])).toEqual([]);
  });
});
