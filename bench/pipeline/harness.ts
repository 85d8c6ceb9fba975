// The pipeline benchmark's workload and its two ways of running it: through the embedded pipeline (queues,
// blob store, claim checks, handlers, the local runtime) and as bare calls of the same stage work (policy
// stub, episode logic, tool calls, rewards) with no queue or blob in between. Reusable for other backends.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeDataset } from '#shared/data/dataset';
import {
  appendedTokens,
  episodeOutcome,
  onAssistantTurn,
  onToolResults,
  startEpisode,
} from '#shared/episode/episode';
import type { EpisodeState } from '#shared/episode/state';
import { putJson } from '#shared/pipeline/blob-json';
import { resolveRunConfig } from '#shared/pipeline/run-config';
import type { RunResources } from '#shared/pipeline/run-resources';
import { samplingParams } from '#shared/policy/sampler';
import type { BlobStore } from '#shared/ports/blob-store';
import { rewardInputFromTrajectory } from '#shared/rewards/input';
import { type RunConfig, RunConfigSchema } from '#shared/schemas/config/run';
import type { DatasetRowInput } from '#shared/schemas/dataset-row';
import { DatasetRowSchema } from '#shared/schemas/dataset-row';
import type { RunStatus } from '#shared/schemas/run-status';
import { buildToolRegistry, type ToolRegistry } from '#shared/tools/registry';
import { keys } from '#shared/topology';
import { StubPolicy } from './stub-policy.ts';

export interface Workload {
  readonly groups: number;
  /** G: samples per group. */
  readonly n: number;
}

export const benchRows = (groups: number): DatasetRowInput[] =>
  Array.from({ length: groups }, (_, i) => ({
    data_source: 'bench',
    prompt: [{ role: 'user', content: `What is 17 * 23? (${i})` }],
    reward_model: { style: 'rule', ground_truth: '391' },
    extra_info: { index: i },
  }));

/** Two turns per trajectory: a calculator call, then a boxed answer (the stub policy's script). */
export function benchConfig(runId: string, w: Workload): RunConfig {
  return resolveRunConfig(
    RunConfigSchema.parse({
      name: 'bench',
      model: { path: 'stub' },
      data: { train: 'train.parquet', shuffle: false },
      rollout: { n: w.n, multi_turn: { max_turns: 2, max_tool_calls: 1 } },
      tools: { tools: [{ kind: 'calculator', config: { max_eval_ms: 10_000, timeout: 60 } }] },
      reward: { functions: [{ name: 'retool' }] },
      // Every group may be in flight at once: the feeder issues the whole workload on the first event.
      trainer: { batch_prompts: w.groups, max_staleness: 0 },
    }),
    runId,
  );
}

/** run.json (running), the dataset and LATEST.json, as the run-starter and the learner would leave them. */
export async function prepareRun(blobs: BlobStore, runId: string, w: Workload): Promise<void> {
  const config = benchConfig(runId, w);
  await blobs.put(`${keys.inputPrefix(runId)}train.parquet`, encodeDataset(benchRows(w.groups)));
  const run: RunStatus = {
    schemaVersion: 1,
    runId,
    status: 'running',
    reason: null,
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    config,
    input: { config: keys.config(runId), train: [`${keys.inputPrefix(runId)}train.parquet`], val: [] },
    totals: { groupsPlanned: w.groups, trainPrompts: w.groups, valPrompts: 0, epochs: 1 },
    learner: { submittedAt: null, jobId: null },
    completedAt: null,
  };
  await putJson(blobs, keys.runJson(runId), run);
}

/** The calculator's default num_workers: the most worker threads its pool grows to. */
export const CALCULATOR_WORKERS = 8;

/**
 * Starts every calculator worker thread the run can use (its pool grows to one per concurrent call, up to
 * num_workers) outside the timed part: a worker's start-up is about a second of CPU (mathjs), paid once per run in
 * training, and with fewer warmed the timed part of each fresh pipeline measured those start-ups instead.
 */
export async function warmTools(resources: RunResources, runId: string): Promise<void> {
  const tools = await resources.toolRegistry(runId, null);
  await resources.reward(runId, null);
  await Promise.all(
    Array.from({ length: CALCULATOR_WORKERS }, () =>
      tools.call({ name: 'calculator', arguments: { expression: '1 + 1' } }),
    ),
  );
}

export const scratch = (tag: string): string => mkdtempSync(join(tmpdir(), `toolrl-bench-${tag}-`));

/**
 * The same work the handlers do for the workload, called directly: policy stub, episode logic, tool calls,
 * rewards. Returns the number of trajectories produced (and checks each scored).
 */
export async function bareRun(resources: RunResources, runId: string, w: Workload): Promise<number> {
  const config = await resources.config(runId);
  const tools = await resources.toolRegistry(runId, null);
  const reward = await resources.reward(runId, null);
  const policy = new StubPolicy(0);
  let scored = 0;
  for (const raw of benchRows(w.groups)) {
    const row = DatasetRowSchema.parse(raw);
    const started = await policy.startGroup(
      row.prompt,
      tools.schemas(),
      w.n,
      samplingParams(config.rollout, 1),
    );
    for (let i = 0; i < w.n; i++) {
      let ep: EpisodeState = startEpisode(config.rollout.multi_turn, row.prompt, {
        promptTokens: started.promptIds.length,
      });
      const s0 = started.samples[i]!;
      const first = onAssistantTurn(ep, {
        text: s0.text,
        stop: s0.stop,
        generatedTokens: s0.tokenIds.length,
        policyVersion: 0,
      });
      if (first.decision.kind !== 'call_tools') throw new Error('the stub script expects a tool call first');
      const results = await Promise.all(first.decision.calls.map((c) => tools.call(c)));
      const after = onToolResults(first.state, results);
      const c = await policy.continueTrajectory(started.states[i]!, after.toolMessages);
      const appended = appendedTokens(
        after.state,
        c.state.tokenIds.length - started.states[i]!.tokenIds.length - c.sample.tokenIds.length,
      );
      ep = onAssistantTurn(appended.state, {
        text: c.sample.text,
        stop: c.sample.stop,
        generatedTokens: c.sample.tokenIds.length,
        policyVersion: 0,
      }).state;
      const outcome = episodeOutcome(ep);
      const r = await reward(rewardInputFromTrajectory(outcome, { groundTruth: '391' }));
      if (r.score !== 1) throw new Error(`the stub trajectory should score 1, got ${r.score}`);
      scored++;
    }
  }
  return scored;
}

/**
 * One tool registry for every run of a script (bench/pipeline/localstack.ts), its calculator pool grown to the
 * tool's `num_workers` before anything is timed: otherwise each run's fresh registry starts mathjs workers inside
 * the timed part (about a second of CPU each), and the figures would compare worker start-ups, not queues and blob
 * stores.
 */
let shared: Promise<ToolRegistry> | undefined;
export function sharedTools(config: RunConfig, baseDir: string): Promise<ToolRegistry> {
  shared ??= (async () => {
    const mt = config.rollout.multi_turn;
    const r = await buildToolRegistry(config.tools, {
      baseDir,
      truncate: { maxLength: mt.max_tool_response_length, side: mt.tool_response_truncate_side },
    });
    await r.callMany(
      Array.from({ length: CALCULATOR_WORKERS }, () => ({
        name: 'calculator',
        arguments: { expression: '1 + 1' },
      })),
    );
    return r;
  })();
  // Each run's RunResources closes its registry; the shared one is closed once, at the end.
  return shared.then(
    (r): ToolRegistry => ({
      schemas: () => r.schemas(),
      names: () => r.names(),
      call: (c, ctx) => r.call(c, ctx),
      callMany: (cs, ctx) => r.callMany(cs, ctx),
      forRow: (row) => r.forRow(row),
      finishTrajectory: (row) => r.finishTrajectory(row),
      stateful: r.stateful,
      close: async () => {},
    }),
  );
}

/** Closes the registry sharedTools made, if it made one. */
export async function closeSharedTools(): Promise<void> {
  await (await shared)?.close();
}
