// Validation bookkeeping: which versions get validation groups (every eval_every-th, none skipped when the
// learner outruns the feeder, and the final one), and the val/... metrics of a version's scored groups,
// overall and per data source, on hand-made groups whose numbers are worked out below.
import { describe, expect, it } from 'vitest';
import { summarise, toolCallValidity, valMetrics, wantedEvalVersions } from '#shared/pipeline/eval';
import { RunConfigSchema } from '#shared/schemas/config/run';
import type { LearnerState } from '#shared/schemas/learner-stdio';
import type { RunStatus } from '#shared/schemas/run-status';
import type { ScoredGroup } from '#shared/schemas/scored-group';
import type { ToolErrorType } from '#shared/schemas/tool-result';

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

  it("reads toolcall's final_answer as accuracy, not its call correctness", () => {
    const g = [
      group('val-v0-p0', 'calc', [
        traj(0.7, { toolcall: 0.7, 'toolcall/correctness': 1, 'toolcall/final_answer': 0 }, [call(null)]),
        traj(1, { toolcall: 1, 'toolcall/correctness': 1, 'toolcall/final_answer': 1 }, [call(null)]),
      ]),
    ];
    const s = summarise('r', 0, g, new Date(0));
    expect(s.accuracyComponent).toBe('toolcall/final_answer');
    expect(s.accuracy).toBe(0.5); // (0 + 1) / 2, where correctness would read 1
  });

  it('the summary carries them, with accuracy null when the reward has no accuracy component', () => {
    const s = summarise('r', 0, groups, new Date(0));
    expect(s).toMatchObject({ accuracyComponent: 'retool/correct', trajectories: 3, prompts: 3 });
    expect(s.metrics['val/accuracy']).toBeCloseTo(2 / 3, 12);
    expect(s.metrics['val/reward_mean']).toBeCloseTo(s.rewardMean, 12);
    const noAccuracy = [group('val-v0-p0', 'qa', [traj(0.2, { format: 0.2 }, [call(null)])])];
    expect(summarise('r', 0, noAccuracy, new Date(0)).metrics).toEqual({
      'val/reward_mean': 0.2,
      'val/accuracy': null,
      'val/tool_call_validity': 1,
      'val/qa/reward_mean': 0.2,
      'val/qa/accuracy': null,
      'val/qa/tool_call_validity': 1,
    });
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
