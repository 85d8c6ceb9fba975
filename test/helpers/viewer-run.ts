// A run folder written directly in the pipeline's key layout, as large as a test needs (10,000 trajectories in a
// few seconds): every group manifest passes ScoredGroupSchema, and metrics.jsonl, batches.jsonl, validation
// summaries and the tiny bundle's tokenizer sit where a real run puts them. What the viewer must show is returned
// beside it, computed from the same numbers. Real runs (test/integration/helpers/tiny-run.ts) are what the browser
// tests open first; this one is for scale and for bad input.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { RunConfigSchema } from '#shared/schemas/config/run';
import { type ScoredGroup, ScoredGroupSchema } from '#shared/schemas/scored-group';
import type { FinishReason, Trajectory } from '#shared/schemas/trajectory';
import { keys } from '#shared/topology';
import { tinyBundle } from '../../bench/support/tiny-model.ts';

export interface SyntheticRow {
  readonly groupId: string;
  readonly sampleIndex: number;
  readonly step: number;
  readonly version: number;
  readonly reward: number;
  readonly finishReason: FinishReason;
  readonly failed: boolean;
  readonly prompt: string;
}

export interface SyntheticRun {
  readonly root: string;
  readonly runId: string;
  readonly rows: readonly SyntheticRow[];
  readonly steps: number;
  readonly valVersions: readonly number[];
}

export interface SyntheticOptions {
  readonly groups: number;
  readonly groupSize: number;
  readonly batchPrompts: number;
  /** Validation prompts per evaluated version (v0 and the last). */
  readonly valPrompts?: number;
  /** run.json's status (default completed). */
  readonly status?: 'running' | 'completed';
  /** Curriculum stages, in order, over equal shares of the steps (default none). */
  readonly stages?: readonly string[];
}

const FINISH: readonly FinishReason[] = ['eos', 'eos', 'length', 'max_turns'];

/** A small deterministic generator (a test must not depend on Math.random). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const write = (root: string, key: string, text: string) => {
  const path = join(root, ...key.split('/'));
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
};

function trajectory(
  rand: () => number,
  sampleIndex: number,
  version: number,
  a: number,
  b: number,
): Trajectory {
  const failed = rand() < 0.25;
  const expression = `${a} + ${b}`;
  const output = failed ? '' : String(a + b);
  const reward = Math.round((rand() * 2 - 1) * 100) / 100;
  const finishReason = FINISH[Math.floor(rand() * FINISH.length)]!;
  // prompt 10 tokens, turn 0 8 sampled, tool result 5 appended, turn 1 6 sampled
  const spans: [number, 0 | 1][] = [
    [10, 0],
    [8, 1],
    [5, 0],
    [6, 1],
  ];
  const mask = spans.flatMap(([n, m]) => new Array<0 | 1>(n).fill(m));
  const tokenIds = mask.map(() => 30 + Math.floor(rand() * 60));
  const call = failed
    ? {
        name: 'calculator',
        arguments: { expression: `${a} +` },
        result: {
          ok: false,
          output: '',
          error: { type: 'execution_error' as const, message: 'unexpected end of expression' },
          truncated: false,
        },
        durationMs: 1,
      }
    : {
        name: 'calculator',
        arguments: { expression },
        result: { ok: true, output, error: null, truncated: false },
        durationMs: 1,
      };
  const answer = failed ? 'I could not compute it.' : `\\boxed{${output}}`;
  return {
    sampleIndex,
    tokenIds,
    promptLength: 10,
    lossMask: mask,
    behaviorLogprobs: mask.map((m) => (m ? -Math.round(rand() * 300) / 100 : 0)),
    policyVersions: mask.map((m) => (m ? version : -1)),
    finishReason,
    turns: [
      {
        turn: 0,
        policyVersion: version,
        text: `<tool_call>{"name": "calculator", "arguments": ${JSON.stringify(call.arguments)}}</tool_call>`,
        content: '',
        toolCalls: [call],
        parseErrors: [],
        stop: 'tool_call',
        tokenStart: 10,
        tokenEnd: 18,
      },
      {
        turn: 1,
        policyVersion: version,
        text: answer,
        content: answer,
        toolCalls: [],
        parseErrors: [],
        stop: 'eos',
        tokenStart: 23,
        tokenEnd: 29,
      },
    ],
    messages: [
      { role: 'user', content: `What is ${a} plus ${b}?` },
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: call.arguments } }],
      },
      {
        role: 'tool',
        name: 'calculator',
        content: failed ? 'Error (execution_error): unexpected end of expression' : output,
      },
      { role: 'assistant', content: answer },
    ],
    reward,
    rewardComponents: { retool: reward, 'retool/correct': failed ? 0 : 1 },
  };
}

/** Writes the run under `root` (the `--workdir` of a `toolrl train` that would have made it). */
export async function writeSyntheticRun(
  root: string,
  runId: string,
  o: SyntheticOptions,
): Promise<SyntheticRun> {
  const rand = lcg(7);
  const steps = Math.ceil(o.groups / o.batchPrompts);
  const config = RunConfigSchema.parse({
    name: 'synthetic',
    model: { path: 'tiny' },
    data: { train: keys.inputPrefix(runId) + 'train.parquet' },
    rollout: { n: o.groupSize },
    trainer: { batch_prompts: o.batchPrompts, eval_every: steps },
  });
  const now = '2026-01-01T00:00:00.000Z';
  write(
    root,
    keys.runJson(runId),
    JSON.stringify({
      schemaVersion: 1,
      runId,
      status: o.status ?? 'completed',
      reason: null,
      createdAt: now,
      updatedAt: now,
      config,
      input: { config: keys.config(runId), train: [config.data.train], val: [] },
      totals: { groupsPlanned: o.groups, trainPrompts: o.groups, valPrompts: o.valPrompts ?? 0, epochs: 1 },
      learner: { submittedAt: now, jobId: 'synthetic' },
      completedAt: o.status === 'running' ? null : now,
    }),
  );
  const rows: SyntheticRow[] = [];
  const metrics: string[] = [];
  const batches: string[] = [];
  const put = (g: ScoredGroup) =>
    write(root, keys.group(runId, g.groupId), JSON.stringify(ScoredGroupSchema.parse(g)));
  const stageOf = (step: number) =>
    o.stages?.length ? o.stages[Math.floor(((step - 1) * o.stages.length) / steps)]! : null;
  for (let step = 1; step <= steps; step++) {
    const version = step - 1;
    const stage = stageOf(step);
    const ids: string[] = [];
    for (let p = (step - 1) * o.batchPrompts; p < Math.min(o.groups, step * o.batchPrompts); p++) {
      const [a, b] = [100 + p, 7 * p + 3];
      const trajs = Array.from({ length: o.groupSize }, (_, i) => trajectory(rand, i, version, a, b));
      const groupId = `e0-p${p}`;
      ids.push(groupId);
      put({
        schemaVersion: 1,
        runId,
        groupId,
        promptId: `p${p}`,
        epoch: 0,
        stage,
        split: 'train',
        dataSource: 'synthetic',
        position: p,
        trajectories: trajs,
      });
      for (const t of trajs)
        rows.push({
          groupId,
          sampleIndex: t.sampleIndex,
          step,
          version,
          reward: t.reward,
          finishReason: t.finishReason,
          failed: !t.turns[0]!.toolCalls[0]!.result.ok,
          prompt: `What is ${a} plus ${b}?`,
        });
    }
    const stepRewards = rows.filter((r) => r.step === step).map((r) => r.reward);
    const mean = stepRewards.reduce((x, y) => x + y, 0) / stepRewards.length;
    metrics.push(
      JSON.stringify({
        step,
        policy_version: version,
        reward_mean: mean,
        reward_std: 0.5,
        pg_loss: -0.01 * step,
        entropy: 1 - step / (2 * steps),
        grad_norm: 1,
        clip_frac: 0,
        'timing_s/forward': 0.1,
      }),
    );
    batches.push(JSON.stringify({ step, policy_version: version, stage, group_ids: ids }));
  }
  write(root, `${keys.metrics(runId)}metrics.jsonl`, `${metrics.join('\n')}\n`);
  write(root, `${keys.metrics(runId)}batches.jsonl`, `${batches.join('\n')}\n`);
  const valVersions = o.valPrompts ? [0, steps] : [];
  for (const v of valVersions) {
    for (let i = 0; i < o.valPrompts!; i++) {
      const t = trajectory(rand, 0, v, 500 + i, 11 * i);
      put({
        schemaVersion: 1,
        runId,
        groupId: `val-v${v}-p${i}`,
        promptId: `val-p${i}`,
        epoch: 0,
        stage: null,
        split: 'val',
        dataSource: 'synthetic',
        position: null,
        trajectories: [t],
      });
    }
    write(
      root,
      keys.evalSummary(runId, v),
      JSON.stringify({
        schemaVersion: 1,
        runId,
        policyVersion: v,
        prompts: o.valPrompts,
        trajectories: o.valPrompts,
        rewardMean: 0,
        rewardStd: 0,
        accuracy: v ? 0.75 : 0.25,
        accuracyComponent: 'retool/correct',
        samplesPerPrompt: 1,
        passAtK: v ? 0.75 : 0.25,
        components: {},
        toolCallsPerTrajectory: 1,
        finishReasons: {},
        metrics: {},
        createdAt: now,
      }),
    );
  }
  // The tokenizer every policy bundle carries: the tiny model's.
  const bundle = (await tinyBundle()).bundleDir;
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) {
    const to = join(root, ...keys.policyVersion(runId, 0).split('/'), f);
    mkdirSync(dirname(to), { recursive: true });
    copyFileSync(join(bundle, f), to);
  }
  return { root, runId, rows, steps, valVersions };
}
