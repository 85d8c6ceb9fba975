// `data:` of the run config: the training and validation files (verl's row format, as Parquet, JSON Lines or JSON).
import { z } from 'zod';

/** A dataset file: Parquet, or JSON Lines / a JSON array that `train` and `submit` convert to Parquet as they upload. */
const DatasetPathSchema = z
  .string()
  .min(1)
  .refine((p) => /\.(parquet|jsonl|json)$/i.test(p), {
    error: (i) =>
      `${JSON.stringify(i.input)} is not a dataset file: use .parquet, .jsonl or .json (\`npx toolrl dataset convert\` makes Parquet from other formats)`,
  });

export const DataConfigSchema = z
  .object({
    train: z
      .union([DatasetPathSchema, z.array(DatasetPathSchema).min(1)])
      .describe(
        "Dataset file(s), relative to the config file (embedded) or uploaded next to it (AWS): .parquet, or .jsonl / .json converted on upload (verl rows, the multi-turn seed's chat lines, ToolBench data).",
      ),
    val: z.union([DatasetPathSchema, z.array(DatasetPathSchema)]).optional(),
    dev: DatasetPathSchema.optional().describe(
      "A dev split, relative to the config file, for choosing the final policy (TRL's load_best_model_at_end): once the run completes, `toolrl train` scores every version validation ran on after v0 (where training started) whose bundle is kept on these rows (mean@k as validation samples) and names the one with the highest accuracy the final policy (metrics/select.json; a tie goes to the later version). The choice never reads validation's scores, so validation still measures the chosen policy on questions it did not see: keep the dev rows out of train and val. `toolrl select` makes the same choice for any run folder (a deployed run's, synced from S3).",
    ),
    max_prompt_length: z
      .number()
      .int()
      .positive()
      .default(1024)
      .describe(
        "Prompts longer than this (tokens, as rendered with the tools) fail the run's dataset check at start; one limit for the whole run, curriculum stages included.",
      ),
    prompt_type: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Prompt template the feeder applies to each row before its rollout: a built-in name (`toolcall`, `retool`, `search`, or an alias) or a .yaml file relative to this config. Rows already written with the same template (`dataset convert --prompt-type`, recorded in extra_info.prompt_type) are left as they are; a row written with another template is an error rather than wrapped twice.',
      ),
    shuffle: z
      .boolean()
      .default(true)
      .describe('Visit the rows in a seeded random order (trainer.seed), a new order each epoch.'),
  })
  .strict()
  .meta({
    id: 'DataConfig',
    description: '`data:` of the run config: the datasets, the prompt limit, the prompt template, shuffling.',
  });
export type DataConfig = z.infer<typeof DataConfigSchema>;
