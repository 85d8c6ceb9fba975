// A whole `train()` run on the embedded default with the tiny model, small enough for the suite: the
// quickstart's calculator questions and demonstrations, two samples, short turns, one prompt per step.
// Tests pass their own datasets and config changes and read back the run's metrics and scored groups.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { deepMerge } from '#shared/config/merge';
import { readDataset, writeDataset } from '#shared/data/dataset';
import { type TrainResult, train } from '#shared/runtime/train';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { LearnerOutputLine } from '#shared/schemas/learner-stdio';
import { type ScoredGroup, ScoredGroupSchema } from '#shared/schemas/scored-group';
import { REPO_ROOT } from '../../../bench/support/tiny-model.ts';

const QUICKSTART = join(REPO_ROOT, 'examples', 'quickstart');

/** The quickstart's rows (arithmetic questions whose answers a tiny model can only get from the tool). */
export const quickstartRows = (split: 'train' | 'val'): Promise<DatasetRow[]> =>
  readDataset(join(QUICKSTART, 'data', `${split}.parquet`));

/** The quickstart's tools and reward (calculator, retool) at suite size; `over` is deep-merged on top. */
export function tinyConfig(over: Record<string, unknown> = {}): Record<string, unknown> {
  const base = {
    name: 'tiny-run',
    model: { path: 'tiny', dtype: 'fp32' },
    data: { train: 'train.parquet', max_prompt_length: 256, shuffle: false },
    rollout: {
      n: 2,
      temperature: 1.0,
      max_new_tokens: 32,
      seed: 0,
      multi_turn: {
        max_turns: 2,
        max_tool_calls: 1,
        max_parallel_calls: 1,
        max_total_response_length: 96,
        max_tool_response_length: 32,
      },
    },
    tools: {
      tools: [
        {
          kind: 'calculator',
          tool_schema: {
            type: 'function',
            function: {
              name: 'calculator',
              description: 'Evaluate an arithmetic expression.',
              parameters: {
                type: 'object',
                properties: { expression: { type: 'string' } },
                required: ['expression'],
              },
            },
          },
        },
      ],
    },
    reward: { functions: [{ name: 'retool' }] },
    algorithm: { adv_estimator: 'grpo', filter_groups: false },
    trainer: {
      batch_prompts: 1,
      micro_batch_tokens: 1024,
      lr: 1.0e-4,
      epochs: 1,
      save_every: 100,
      eval_every: 0,
    },
    logging: { tensorboard: false, progress_interval_s: 60 },
  };
  return deepMerge(base, over) as Record<string, unknown>;
}

export interface TinyRun {
  readonly dir: string;
  /** Writes a dataset next to the config (`name` as the config names it). */
  dataset(name: string, rows: readonly DatasetRow[]): void;
  run(config: Record<string, unknown>, maxSteps?: number): Promise<TrainResult>;
  /** The learner's output lines of the last `run` (its SFT steps, publishes, commits...). */
  readonly learnerLines: LearnerOutputLine[];
  close(): void;
}

export function tinyRun(tag: string): TinyRun {
  const dir = mkdtempSync(join(tmpdir(), `toolrl-${tag}-`));
  const learnerLines: LearnerOutputLine[] = [];
  return {
    dir,
    learnerLines,
    dataset: (name, rows) => writeDataset(join(dir, name), rows),
    run: (config, maxSteps) => {
      const configPath = join(dir, 'run.yaml');
      writeFileSync(configPath, toYaml(config));
      learnerLines.length = 0;
      return train({
        configPath,
        workdir: join(dir, 'work'),
        ortThreads: 1,
        onEvent: (e) => {
          if (e.kind === 'learner') learnerLines.push(e.line);
        },
        ...(maxSteps !== undefined ? { maxSteps } : {}),
      });
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** metrics.jsonl: one object per learner step. */
export const stepMetrics = (result: TrainResult): Record<string, number | null>[] =>
  readFileSync(result.metricsPath, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number | null>);

/** The run's scored groups (train and validation), by group id. */
export function scoredGroups(result: TrainResult): Map<string, ScoredGroup> {
  const root = join(result.runDir, 'groups');
  const out = new Map<string, ScoredGroup>();
  for (const f of readdirSync(root).sort())
    out.set(
      f.replace(/\.json$/, ''),
      ScoredGroupSchema.parse(JSON.parse(readFileSync(join(root, f), 'utf8'))),
    );
  return out;
}
