// `data:` of the run config: the training and validation Parquet files (verl's row format).
import { z } from 'zod';

export const DataConfigSchema = z
  .object({
    /** Parquet file(s), relative to the config file (embedded) or uploaded next to it (AWS). */
    train: z.union([z.string(), z.array(z.string()).min(1)]),
    val: z.union([z.string(), z.array(z.string())]).optional(),
    /** Prompts longer than this (tokens) fail validation. */
    max_prompt_length: z.number().int().positive().default(1024),
    /** Prompt template applied to rows (see shared/data/prompts/). */
    prompt_type: z.string().optional(),
    shuffle: z.boolean().default(true),
  })
  .strict();
export type DataConfig = z.infer<typeof DataConfigSchema>;
