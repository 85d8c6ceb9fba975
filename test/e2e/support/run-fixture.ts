// A small run for the e2e scenarios, written to a folder: the quickstart's arithmetic task (its first prompts,
// its calculator and its SFT demonstrations, so the tiny model calls the tool) sized to finish in minutes on
// two cores. `filter_groups: false` makes every group a learner step, so versions advance however the tiny
// model scores; `save_every: 1` checkpoints every step, so a killed learner has something to resume from.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { encodeDataset, readDataset } from '#shared/data/dataset';
import { REPO_ROOT } from '../../../infra/lib/docker-context.ts';
import { memoriseSft, rowDemonstrations } from '../../helpers/demonstrations.ts';

const QUICKSTART = join(REPO_ROOT, 'examples/quickstart');

export interface RunFiles {
  readonly configPath: string;
  readonly datasetPath: string;
  readonly prompts: number;
}

export interface RunOptions {
  /** Train prompts (one group each, one epoch). */
  readonly prompts?: number;
  readonly groupSize?: number;
  readonly batchPrompts?: number;
  /** Tokens per assistant turn (a hermes calculator call of the tiny model's byte-level BPE needs about 40). */
  readonly maxNewTokens?: number;
  /** SFT warm-start steps on the quickstart's demonstrations (0: none; the random tiny model then rarely calls tools). */
  readonly sftSteps?: number;
  /** Demonstrations per SFT step. */
  readonly sftBatchSize?: number;
  /**
   * Instead of `sftSteps` on the quickstart's demonstrations, memorise the run's own rows' correct calls
   * (`rowDemonstrations`, `memoriseSft`), so that the tiny model calls the calculator on any CPU.
   */
  readonly memorise?: boolean;
  /** Policy versions a group may lag before the learner drops it (the feeder keeps batchPrompts x (1 + this) in flight). */
  readonly maxStaleness?: number;
  /** Rows to add to the dataset's first row's extra_info (e.g. a large field that forces a claim check). */
  readonly extraInfo?: Record<string, unknown>;
  /** Extra config sections, merged over the defaults at the top level. */
  readonly overrides?: Record<string, unknown>;
}

export async function writeRun(dir: string, o: RunOptions = {}): Promise<RunFiles> {
  const prompts = o.prompts ?? 8;
  const rows = (await readDataset(readFileSync(join(QUICKSTART, 'data/train.parquet')))).slice(0, prompts);
  if (rows.length < prompts) throw new Error(`the quickstart dataset has only ${rows.length} rows`);
  if (o.extraInfo) rows[0] = { ...rows[0]!, extra_info: { ...rows[0]!.extra_info, ...o.extraInfo } };
  const datasetPath = join(dir, 'train.parquet');
  writeFileSync(datasetPath, encodeDataset(rows));
  const quickstart = (await import('yaml')).parse(readFileSync(join(QUICKSTART, 'run.yaml'), 'utf8'));
  if (o.memorise)
    writeFileSync(join(dir, 'sft.jsonl'), rowDemonstrations(rows, quickstart.tools.tools[0].tool_schema));
  const config = {
    name: 'e2e',
    model: { path: 'tiny', dtype: 'fp32' },
    data: { train: 'train.parquet', max_prompt_length: 256, shuffle: false },
    rollout: {
      n: o.groupSize ?? 4,
      temperature: 1.0,
      max_new_tokens: o.maxNewTokens ?? 32,
      seed: 0,
      multi_turn: {
        max_turns: 2,
        max_tool_calls: 1,
        max_parallel_calls: 1,
        max_total_response_length: 96,
        max_tool_response_length: 64,
        tool_parser_format: 'hermes',
      },
    },
    tools: quickstart.tools,
    reward: { functions: [{ name: 'retool', weight: 1 }] },
    algorithm: { adv_estimator: 'grpo', filter_groups: false },
    trainer: {
      batch_prompts: o.batchPrompts ?? 2,
      micro_batch_tokens: 1024,
      lr: 3.0e-4,
      epochs: 1,
      max_staleness: o.maxStaleness ?? 1,
      publish_every: 1,
      save_every: 1,
      seed: 0,
      ...(o.memorise
        ? { sft: memoriseSft('sft.jsonl') }
        : o.sftSteps
          ? {
              sft: {
                data: join(QUICKSTART, 'data/sft.parquet'),
                steps: o.sftSteps,
                lr: 5.0e-3,
                batch_size: o.sftBatchSize ?? 16,
              },
            }
          : {}),
    },
    logging: { tensorboard: false },
    ...o.overrides,
  };
  const configPath = join(dir, 'run.yaml');
  writeFileSync(configPath, toYaml(config));
  return { configPath, datasetPath, prompts };
}

/** The local learner's protocol lines for a run the harness started (`<dir>/learners/<runId>/learner.out.jsonl`). */
export const learnerLines = (dir: string, runId: string): { type: string; loss?: number }[] =>
  readFileSync(join(dir, 'learners', runId, 'learner.out.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { type: string; loss?: number });
