// The embedded pipeline end to end with the real learner (a tiny model, a few steps through `train()`): policy
// versions advance, rollouts started after a publish use the newer version, tool calls run and their results are
// in the trajectories' tokens, rewards carry their components, and the learner consumes every group exactly once.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify as toYaml } from 'yaml';
import { parseRunConfig } from '#shared/config/resolve';
import { loadPolicy } from '#shared/policy/index';
import { train } from '#shared/runtime/train';
import type { LearnerOutputLine } from '#shared/schemas/learner-stdio';
import { buildToolRegistry } from '#shared/tools/registry';
import { lastSftLoss, memoriseSft, rowDemonstrations } from '../helpers/demonstrations.ts';
import { quickstartRows, scoredGroups, stepMetrics, tinyConfig, tinyRun } from './helpers/tiny-run.ts';

const run = tinyRun('train-e2e');
afterAll(() => run.close());

const TOOLCALL_PARTS = [
  'toolcall/correctness',
  'toolcall/necessity',
  'toolcall/result_use',
  'toolcall/final_answer',
  'toolcall/coherence',
];

describe('toolrl train on the embedded default, end to end', () => {
  it('advances policy versions, rolls out with the newer ones, runs tools, and trains on each group once', async () => {
    // GIVEN 6 calculator questions, 2 per step (3 steps), 4 samples each, a publish after every step, only groups
    // of the current version in flight (max_staleness 0: the feeder tops up after each publish), and a short
    // warm start that memorises the rows' correct calls (checked below), so that the model writes calls on any CPU
    const rows = (await quickstartRows('train')).slice(0, 6);
    run.dataset('train.parquet', rows);
    const lines: LearnerOutputLine[] = [];
    const configPath = join(run.dir, 'run.yaml');
    const config = tinyConfig({
      rollout: { n: 4 },
      reward: { functions: [{ name: 'toolcall' }] },
      trainer: {
        batch_prompts: 2,
        max_staleness: 0,
        publish_every: 1,
        sft: memoriseSft('sft.jsonl'),
      },
    });
    const schema = (config.tools as { tools: { tool_schema: unknown }[] }).tools[0]!.tool_schema;
    writeFileSync(join(run.dir, 'sft.jsonl'), rowDemonstrations(rows, schema));
    writeFileSync(configPath, toYaml(config));

    // WHEN the run trains to its end
    const result = await train({
      configPath,
      workdir: join(run.dir, 'work'),
      ortThreads: 1,
      onEvent: (e) => {
        if (e.kind === 'learner') lines.push(e.line);
      },
    });

    // THEN it completes by itself after 3 steps, each publishing the next version (v0 is the warm start)
    expect(result.reason).toBeNull();
    expect(result.status).toBe('completed');
    expect(lastSftLoss(lines), 'the warm start memorised the rows').toBeLessThan(0.02);
    const published = lines.flatMap((l) => (l.type === 'published' ? [l.version] : []));
    expect(published).toEqual([0, 1, 2, 3]);
    const steps = stepMetrics(result);
    // (a step's policy_version is the version it started from; it publishes the next)
    expect(steps.map((s) => [s.step, s.policy_version])).toEqual([
      [1, 0],
      [2, 1],
      [3, 2],
    ]);

    // Every train group was consumed exactly once: committed once, trained or dropped as stale, never twice.
    const committed = lines.flatMap((l) => (l.type === 'committed' ? l.groupIds : []));
    expect(new Set(committed).size).toBe(committed.length);
    const groups = [...scoredGroups(result).values()].filter((g) => g.split === 'train');
    expect(groups.map((g) => g.groupId).sort()).toEqual([...committed].sort());
    const stale = lines.filter((l) => l.type === 'dropped' && l.reason === 'stale').length;
    const trained = steps.reduce((n, s) => n + (s.groups ?? 0), 0);
    expect(trained + stale).toBe(groups.length);
    expect(result.learner).toMatchObject({ groupsConsumed: trained, done: true });

    // Rollouts picked up the newer versions: the groups of step s were sampled by v(s-1) (v3 is published after
    // the last step), and within a trajectory no turn is older than the one before it.
    const versionsOf = (g: (typeof groups)[number]) =>
      g.trajectories.flatMap((t) => t.turns.map((u) => u.policyVersion));
    const sampledBy = new Set(groups.flatMap(versionsOf));
    expect([...sampledBy].sort()).toEqual([0, 1, 2]);
    expect(stale, 'nothing is stale when only current groups are in flight').toBe(0);
    for (const t of groups.flatMap((g) => g.trajectories)) {
      const vs = t.turns.map((u) => u.policyVersion);
      expect(vs, 'turn versions never go back').toEqual([...vs].sort((a, b) => a - b));
      // The token-level record agrees with the turn record: each sampled token carries its turn's version.
      for (const u of t.turns)
        expect(new Set(t.policyVersions.slice(u.tokenStart, u.tokenEnd))).toEqual(new Set([u.policyVersion]));
    }

    // Tool calls ran for real and their results were appended as tokens the model then read (loss mask 0).
    const policy = await loadPolicy(join(result.runDir, 'policy', 'v0'), { threads: 1 });
    const tools = await buildToolRegistry(parseRunConfig(toYaml(config), 'run.yaml').tools, {
      baseDir: run.dir,
    });
    let checked = 0;
    try {
      for (const t of groups.flatMap((g) => g.trajectories)) {
        for (const [i, u] of t.turns.entries()) {
          const call = u.toolCalls.find((c) => c.result.ok);
          const next = t.turns[i + 1];
          if (!call || !next) continue;
          // The recorded output is the calculator's own answer to the arguments the model wrote.
          expect(call.result, JSON.stringify(call.arguments)).toEqual(
            await tools.call({ name: call.name, arguments: call.arguments }),
          );
          const appended = t.tokenIds.slice(u.tokenEnd, next.tokenStart);
          expect(t.lossMask.slice(u.tokenEnd, next.tokenStart).every((m) => m === 0)).toBe(true);
          const text = policy.tokenizer.decode(appended);
          expect(text).toContain('<tool_response>');
          expect(text).toContain(call.result.output);
          checked++;
        }
      }
    } finally {
      await policy.dispose();
      await tools.close();
    }
    expect(checked, 'trajectories with a successful call and a turn after it').toBeGreaterThan(0);

    // Rewards carry their components, in the stored trajectories and in the learner's step metrics.
    for (const t of groups.flatMap((g) => g.trajectories))
      for (const part of TOOLCALL_PARTS) expect(t.rewardComponents[part], part).toEqual(expect.any(Number));
    for (const s of steps) expect(s['reward/toolcall/final_answer']).toEqual(expect.any(Number));
    expect(readFileSync(result.metricsPath, 'utf8').trim().split('\n')).toHaveLength(3);
  });
});
