// `data:` of the run config: the training and validation Parquet files (verl's row format).
import { z } from 'zod';

export const DataConfigSchema = z
  .object({
    /** Parquet file(s), relative to the config file (embedded) or uploaded next to it (AWS). */
    train: z.union([z.string(), z.array(z.string()).min(1)]),
    val: z.union([z.string(), z.array(z.string())]).optional(),
    /**
     * Prompts longer than this (tokens, as rendered with the tools) fail the run's dataset check at start; one
     * limit for the whole run, curriculum stages included.
     */
    max_prompt_length: z.number().int().positive().default(1024),
    /**
     * Prompt template the feeder applies to each row before its rollout: a built-in name (`toolcall`, `retool`,
     * `search`, or an alias) or a .yaml file relative to this config. Rows already written with the same template
     * (`dataset convert --prompt-type`, recorded in extra_info.prompt_type) are left as they are; a row written
     * with another template is an error rather than wrapped twice.
     */
    prompt_type: z.string().min(1).optional(),
    /** Visit the rows in a seeded random order (trainer.seed), a new order each epoch. */
    shuffle: z.boolean().default(true),
  })
  .strict();
export type DataConfig = z.infer<typeof DataConfigSchema>;
