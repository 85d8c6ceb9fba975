// A run on the embedded pipeline for integration tests: a temp workdir, a calculator dataset uploaded the way
// `toolrl train` uploads it (so the real run-starter starts the run), and the tiny test bundle published as
// policy v0 by a stand-in learner job (the tests here exercise the pipeline; the learner has its own).
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { encodeDataset } from '#shared/data/dataset';
import { readJson } from '#shared/pipeline/blob-json';
import { sha256Hex } from '#shared/pipeline/claim-check';
import type { LearnerJobs } from '#shared/ports/learner-jobs';
import { EmbeddedPipeline, type EmbeddedPipelineOptions } from '#shared/runtime/embedded';
import type { DatasetRowInput } from '#shared/schemas/dataset-row';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { keys, type QueueName } from '#shared/topology';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';
import { HANG_MS } from '../../helpers/hang.ts';

export const RUN_ID = 'it-run';

export function calculatorRows(n: number): DatasetRowInput[] {
  return Array.from({ length: n }, (_, i) => {
    const a = 11 + i;
    const b = 30 + 2 * i;
    return {
      data_source: 'calc',
      prompt: [{ role: 'user', content: `What is ${a} + ${b}? Use the calculator.` }],
      reward_model: { style: 'rule', ground_truth: String(a + b) },
      extra_info: { index: i },
    };
  });
}

/** A small run config: G samples, short turns, the calculator, the format and retool rewards. */
export function testConfig(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'it',
    model: { path: 'tiny' },
    data: { train: 'train.parquet', max_prompt_length: 512, shuffle: false },
    rollout: {
      n: 4,
      temperature: 1.0,
      max_new_tokens: 16,
      seed: 7,
      multi_turn: { max_turns: 2, max_tool_calls: 2, max_total_response_length: 64 },
    },
    tools: { tools: [{ kind: 'calculator' }] },
    reward: { functions: [{ name: 'retool', weight: 1 }] },
    trainer: { batch_prompts: 2, max_staleness: 1, epochs: 1 },
    ...over,
  };
}

export interface Fixture {
  readonly root: string;
  readonly pipeline: EmbeddedPipeline;
  readonly submitted: RunStatus[];
  /** Uploads config + dataset (the dataset last: its notification starts the run). */
  upload(config?: Record<string, unknown>, rows?: DatasetRowInput[] | Uint8Array): Promise<void>;
  /** Publishes the tiny bundle as `v<version>` and moves LATEST.json (what the learner does). */
  publish(version: number): Promise<void>;
  /**
   * Everything in a queue right now, browsed (not received: receive counts and visibility are untouched, so looking
   * can never dead-letter a message or hide it from its consumer).
   */
  browse(queue: QueueName, dlq?: boolean): ReturnType<EmbeddedQueue['browse']>;
  close(): Promise<void>;
}

export async function pipelineFixture(opts: Partial<EmbeddedPipelineOptions> = {}): Promise<Fixture> {
  const root = mkdtempSync(join(tmpdir(), 'toolrl-it-'));
  const submitted: RunStatus[] = [];
  const learnerJobs: LearnerJobs = {
    submit: async (run) => {
      submitted.push(run);
      return { jobId: 'stand-in' };
    },
  };
  const pipeline = new EmbeddedPipeline({
    root,
    runId: RUN_ID,
    learnerJobs,
    waitTimeSec: 0.2,
    retryAfterSec: 0,
    ortThreads: 1,
    ...opts,
  });
  const { bundleDir } = await tinyBundle();
  const fx: Fixture = {
    root,
    pipeline,
    submitted,
    async upload(config = testConfig(), rows = calculatorRows(4)) {
      await pipeline.blobs.put(keys.config(RUN_ID), toYaml(config));
      await pipeline.blobs.put(
        `${keys.inputPrefix(RUN_ID)}train.parquet`,
        rows instanceof Uint8Array ? rows : encodeDataset(rows),
      );
    },
    async publish(version) {
      const prefix = keys.policyVersion(RUN_ID, version);
      const dir = pipeline.blobs.localPath(prefix);
      mkdirSync(dir, { recursive: true });
      for (const f of readdirSync(bundleDir)) copyFileSync(join(bundleDir, f), join(dir, f));
      const manifest = readFileSync(join(dir, 'manifest.json'));
      await pipeline.blobs.put(
        keys.policyLatest(RUN_ID),
        JSON.stringify({ version, prefix, sha256: sha256Hex(manifest) }),
      );
    },
    browse(queue, dlq = false) {
      return (dlq ? pipeline.queues.dlqs[queue] : pipeline.queues.queues[queue]).browse();
    },
    // The run's folder goes with the pipeline (each fixture's is a few MB: bundles, journals, trajectories).
    close: async () => {
      await pipeline.stop();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return fx;
}

/** Polls until `cond` holds (the pipeline is asynchronous); fails with `what` after `ms`. */
export async function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  ms = HANG_MS,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The fixture run's run.json as the stages left it (undefined before the run-starter wrote it). */
export const runJson = async (f: Fixture): Promise<RunStatus | undefined> =>
  (await readJson(f.pipeline.blobs, keys.runJson(RUN_ID), RunStatusSchema))?.value;
