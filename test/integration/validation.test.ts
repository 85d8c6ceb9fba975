// Validation through a whole tiny `train()` run with eval_every 1: every published version (v0 before any
// step, v1, and the final v2) gets one greedy rollout per validation prompt, and each version's summary
// carries val/reward_mean, val/accuracy and val/tool_call_validity, overall and per data source, equal to
// what the stored validation groups say; and `toolrl eval` of the final bundle reproduces its summary, the run's
// own chat template (model.chat_template) included, and so does `toolrl eval` of the final checkpoint; with
// data.dev the run chooses its final policy on the dev rows, as `toolrl select` does for any run folder.
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { LoopStats } from '#shared/policy/decode-loop';
import { loadPolicy } from '#shared/policy/index';
import { asBundle, evaluate, runConfigBeside } from '#shared/runtime/evaluate';
import { chooseBest, SelectionSchema, selectPolicy } from '#shared/runtime/select';
import { type ScoredGroup, ScoredGroupSchema } from '#shared/schemas/scored-group';
import { lastSftLoss, memoriseSft, rowDemonstrations } from '../helpers/demonstrations.ts';
import { quickstartRows, scoredGroups, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const run = tinyRun('validation');
afterAll(() => run.close());

type Traj = ScoredGroup['trajectories'][number];
const INVALID = ['unknown_tool', 'invalid_arguments', 'parse_error'];

/** The three val/ metrics of some trajectories, recomputed from the stored records. */
function recomputed(trajs: readonly Traj[]) {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const turns = trajs.flatMap((t) => t.turns);
  const attempted = turns.reduce((n, turn) => n + turn.toolCalls.length + turn.parseErrors.length, 0);
  const valid = turns
    .flatMap((turn) => turn.toolCalls)
    .filter((c) => !INVALID.includes(c.result.error?.type ?? '')).length;
  return {
    reward_mean: mean(trajs.map((t) => t.reward)),
    accuracy: mean(trajs.map((t) => t.rewardComponents['retool/correct']!)),
    tool_call_validity: attempted === 0 ? null : valid / attempted,
  };
}

describe('validation on the embedded default', () => {
  it('greedy rollouts every eval_every versions; val/ metrics per data source match the stored groups', async () => {
    const train = (await quickstartRows('train')).slice(0, 2);
    const [q0, q1] = await quickstartRows('val');
    run.dataset('train.parquet', train);
    // The same question under two data sources: greedy decoding must answer both exactly alike.
    run.dataset('val.parquet', [
      { ...q0!, data_source: 'arith/a' },
      { ...q0!, data_source: 'arith/b' },
      { ...q1!, data_source: 'arith/b' },
    ]);
    // A dev split (data.dev) for choosing the final policy once the run completes: other questions.
    const dev = (await quickstartRows('val')).slice(2, 5);
    run.dataset('dev.parquet', dev);
    // A warm start that memorises these questions' correct calls (checked below), so that the model writes tool
    // calls on any CPU (validity is null without any).
    const config = tinyConfig();
    const schema = (config.tools as { tools: { tool_schema: unknown }[] }).tools[0]!.tool_schema;
    writeFileSync(join(run.dir, 'sft.jsonl'), rowDemonstrations([...train, q0!, q1!], schema));
    const result = await run.run(
      tinyConfig({
        // A template other than the bundle's: eval must render prompts with it, as the run's rollouts did.
        model: {
          chat_template: readFileSync(
            join(import.meta.dirname, '../fixtures/chat-templates/tools-only.jinja'),
            'utf8',
          ),
        },
        data: { val: 'val.parquet', dev: 'dev.parquet' },
        trainer: { eval_every: 1, sft: memoriseSft('sft.jsonl') },
      }),
    );

    // 2 train rows x 1 epoch at 1 prompt per step: the run ends by itself after 2 steps (v2).
    expect(result.reason).toBeNull();
    expect(result).toMatchObject({ status: 'completed', learner: { step: 2, done: true } });
    expect(lastSftLoss(run.learnerLines), 'the warm start memorised the questions').toBeLessThan(0.02);
    expect(result.evals.map((e) => e.policyVersion)).toEqual([0, 1, 2]);
    // Where the rollout engine's time went (the train command's `rollouts:` line): counted over every version.
    const rollouts = result.rollouts!;
    expect(rollouts.prefillTokens).toBeGreaterThan(0);
    expect(rollouts.decodeSteps).toBeGreaterThan(0);
    expect(rollouts.decodeTokens).toBeGreaterThanOrEqual(rollouts.decodeSteps); // a pass decodes >= 1 row

    const groups = scoredGroups(result);
    for (const id of ['e0-p0', 'e0-p1']) expect(groups.get(id)?.trajectories).toHaveLength(2);
    let attempted = 0;
    for (const summary of result.evals) {
      const v = summary.policyVersion;
      const val = [0, 1, 2].map((i) => groups.get(`val-v${v}-p${i}`)!);
      expect(val.map((g) => [g.split, g.dataSource, g.trajectories.length])).toEqual([
        ['val', 'arith/a', 1],
        ['val', 'arith/b', 1],
        ['val', 'arith/b', 1],
      ]);
      const [a, b, c] = val.map((g) => g.trajectories[0]!);
      expect(a!.tokenIds).toEqual(b!.tokenIds);
      expect(a!.turns.every((t) => t.policyVersion === v)).toBe(true);

      // Greedy: the version's own bundle, decoding at temperature 0 with another seed, writes the same turn.
      const policy = await loadPolicy(join(result.runDir, 'policy', `v${v}`), { threads: 1 });
      try {
        for (const t of [a!, c!]) {
          const first = t.turns[0]!;
          const [greedy] = await policy.sampleGroup(t.tokenIds.slice(0, t.promptLength), 1, {
            temperature: 0,
            topP: 1,
            topK: 0,
            maxNewTokens: 32,
            seed: 12345,
            stopOnToolCallEnd: true,
            maxTotalResponseTokens: 96,
          });
          expect(greedy!.tokenIds, `v${v} first turn`).toEqual(
            t.tokenIds.slice(first.tokenStart, first.tokenEnd),
          );
        }
      } finally {
        await policy.dispose();
      }

      const want: Record<string, number | null> = {};
      const put = (prefix: string, trajs: Traj[]) => {
        for (const [k, x] of Object.entries(recomputed(trajs))) want[`${prefix}/${k}`] = x;
      };
      put('val', [a!, b!, c!]);
      put('val/arith/a', [a!]);
      put('val/arith/b', [b!, c!]);
      expect(Object.keys(summary.metrics).sort()).toEqual(Object.keys(want).sort());
      for (const [k, x] of Object.entries(want)) {
        if (x === null) expect(summary.metrics[k], k).toBeNull();
        else expect(summary.metrics[k], k).toBeCloseTo(x, 12);
      }
      attempted += [a!, b!, c!].reduce(
        (n, t) => n + t.turns.reduce((m, u) => m + u.toolCalls.length + u.parseErrors.length, 0),
        0,
      );
    }
    // The warm start made the model try calls, so validity was measured on real attempts, not left null.
    expect(attempted).toBeGreaterThan(0);

    // `toolrl eval` on the final bundle, with the run's own config found beside it, is the same measurement as
    // the run's validation of that version: the same groups (val-v2-p<i>, so the same sampling seeds when
    // validation samples), the same reward, the same summary.
    const beside = runConfigBeside(join(result.runDir, 'policy', 'v2'));
    expect(beside).not.toBeNull();
    // With keepDir (`toolrl eval --out DIR`) its answers stay behind as a run folder: the same groups as the run's.
    const keep = join(run.dir, 'eval-kept');
    const options = {
      policyDir: join(result.runDir, 'policy', 'v2'),
      dataPath: join(run.dir, 'val.parquet'),
      config: beside!.config,
      sourceDir: beside!.sourceDir,
      ortThreads: 1,
      keepDir: keep,
    };
    let evalRollouts: LoopStats | undefined;
    const again = await evaluate({
      ...options,
      onRollouts: (r) => {
        evalRollouts = r;
      },
    });
    // The evaluation prefilled v2's validation prompts again: fewer tokens than the run, which also prefilled
    // v0's and v1's and its training groups'.
    expect(evalRollouts!.prefillTokens).toBeGreaterThan(0);
    expect(evalRollouts!.prefillTokens).toBeLessThan(rollouts.prefillTokens);
    const { runId: _r, createdAt: _c, ...measured } = again;
    const { runId: _r2, createdAt: _c2, ...fromRun } = result.evals[2]!;
    expect(measured.policyVersion).toBe(2);
    expect(measured).toEqual(fromRun);
    const keptDir = join(keep, 'runs', again.runId, 'groups');
    const kept = readdirSync(keptDir).sort();
    expect(kept).toEqual(['val-v2-p0.json', 'val-v2-p1.json', 'val-v2-p2.json']);
    for (const f of kept) {
      const mine = ScoredGroupSchema.parse(JSON.parse(readFileSync(join(keptDir, f), 'utf8')));
      const theirs = groups.get(f.replace(/\.json$/, ''))!;
      expect(mine.trajectories.map((t) => [t.tokenIds, t.reward])).toEqual(
        theirs.trajectories.map((t) => [t.tokenIds, t.reward]),
      );
    }
    const keptStatus = JSON.parse(readFileSync(join(keep, 'runs', again.runId, 'run.json'), 'utf8'));
    expect(keptStatus.status).toBe('completed');
    // A folder that already holds an evaluation is not written over.
    await expect(evaluate(options)).rejects.toThrow(/already holds a runs\/ folder/);

    // The final checkpoint (not a bundle) is exported under the version it was current at, so its evaluation is the
    // run's validation of v2 again; given `model.rollout_quantization`, the export quantises as the learner did.
    const checkpoints = join(result.runDir, 'checkpoints');
    const last = readdirSync(checkpoints)
      .filter((d) => existsSync(join(checkpoints, d, 'COMPLETE.json')))
      .sort((a, b) => Number.parseInt(a.slice(5), 10) - Number.parseInt(b.slice(5), 10))
      .at(-1)!;
    expect(last).toMatch(/^step-2\b/);
    const { keepDir: _k, ...notKept } = options;
    const fromCheckpoint = await evaluate({ ...notKept, policyDir: join(checkpoints, last) });
    const { runId: _r3, createdAt: _c3, ...measuredAgain } = fromCheckpoint;
    expect(measuredAgain).toEqual(fromRun);
    for (const [dir, quantization] of [
      [join(checkpoints, last), 'int8'],
      [join(checkpoints, last, 'model'), 'none'],
    ] as const) {
      const scratch = mkdtempSync(join(run.dir, 'export-'));
      const bundle = await asBundle(dir, scratch, undefined, {
        rollout_quantization: quantization,
        rollout_quantization_block_size: 32,
      });
      const manifest = JSON.parse(readFileSync(join(bundle, 'manifest.json'), 'utf8'));
      expect([manifest.version, manifest.quantization]).toEqual([2, quantization]);
    }

    // With data.dev the run ended by choosing its final policy on the dev rows: every validated version scored there
    // by eval's own measurement (v1's score is `toolrl eval` of v1 on dev.parquet), the best chosen.
    const chosen = result.selection!;
    // The candidates are the versions validated after v0 (where training started).
    expect(chosen.candidates.map((c) => [c.version, c.valAccuracy])).toEqual(
      result.evals.slice(1).map((e) => [e.policyVersion, e.accuracy]),
    );
    expect(chosen.data).toBe(join(run.dir, 'dev.parquet'));
    expect(chosen.chosen).toBe(chooseBest(chosen.candidates));
    const v1OnDev = await evaluate({
      ...notKept,
      policyDir: join(result.runDir, 'policy', 'v1'),
      dataPath: join(run.dir, 'dev.parquet'),
    });
    expect(v1OnDev.prompts).toBe(3);
    expect(chosen.candidates[0]!.accuracy).toBe(v1OnDev.accuracy);

    // `toolrl select` scores the validated versions it is given (v0 too, when named) with eval's own measurement
    // (here on the validation file itself, so each score is that version's validation again), chooses by that score
    // alone and records the choice in metrics/select.json.
    const selection = await selectPolicy({
      runDir: result.runDir,
      dataPath: join(run.dir, 'val.parquet'),
      versions: [2, 0, 1],
      ortThreads: 1,
    });
    expect(selection.candidates.map((c) => c.version)).toEqual([0, 1, 2]);
    for (const [i, c] of selection.candidates.entries()) {
      expect(c.accuracy, `v${c.version}`).toBe(result.evals[i]!.accuracy);
      expect(c.valAccuracy, `v${c.version}`).toBe(result.evals[i]!.accuracy);
    }
    expect(selection.chosen).toBe(chooseBest(selection.candidates));
    expect(
      SelectionSchema.parse(JSON.parse(readFileSync(join(result.runDir, 'metrics', 'select.json'), 'utf8'))),
    ).toEqual(selection);
    const only = await selectPolicy({ runDir: result.runDir, dataPath: options.dataPath, versions: [1] });
    expect([only.chosen, only.candidates.length]).toEqual([1, 1]);
    await expect(
      selectPolicy({ runDir: result.runDir, dataPath: options.dataPath, versions: [7] }),
    ).rejects.toThrow(/v7 was not validated by the run/);
    await expect(selectPolicy({ runDir: run.dir, dataPath: options.dataPath })).rejects.toThrow(
      /is not a run folder/,
    );
  });

  it('a data.dev that cannot be read fails the command before the run starts, naming the file', async () => {
    await expect(
      run.run(tinyConfig({ data: { val: 'val.parquet', dev: 'no-such-dev.parquet' } })),
    ).rejects.toThrow(/data\.dev: cannot read .*no-such-dev\.parquet/);
  });
});
