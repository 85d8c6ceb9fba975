// One training row: verl's Parquet columns (`data_source`, `prompt`, `ability`, `reward_model`,
// `extra_info`), so the files verl's preprocessors write load unchanged. Column names stay snake_case
// because they are verl's, not wire keys of ours.
import { z } from 'zod';
import { ChatMessageSchema, ToolSchemaSchema } from './chat.ts';

/** A value stored as a JSON string by a writer that could not give it a Parquet type (parsed back here). */
const parseJsonString = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

/** `{name, description, parameters}` without the `{"type": "function", "function": …}` wrapper is accepted too. */
const wrapBareFunction = (v: unknown): unknown =>
  typeof v === 'object' && v !== null && !('function' in v) && 'name' in v
    ? { type: 'function', function: v }
    : v;

/** Per-row tool schemas (ToolBench rows each bring their own APIs); a JSON string of the list is accepted. */
export const RowToolsSchema = z.preprocess(
  (v) => {
    const parsed = parseJsonString(v);
    return Array.isArray(parsed) ? parsed.map(wrapBareFunction) : parsed;
  },
  z.array(ToolSchemaSchema).superRefine((tools, ctx) => {
    const seen = new Set<string>();
    tools.forEach((t, i) => {
      if (seen.has(t.function.name)) {
        ctx.addIssue({ code: 'custom', path: [i], message: `duplicate tool name ${t.function.name}` });
      }
      seen.add(t.function.name);
    });
  }),
);

/**
 * How the row is scored. `ground_truth` is whatever the reward reads: a string (gsm8k, AIME), `{"target":
 * [...]}` (Search-R1 / NQ / HotpotQA), per-turn call lists (BFCL), `{"relevant_apis": [...]}` (ToolBench).
 * @example {"style": "rule", "ground_truth": "72"}
 */
export const RewardModelSchema = z
  .object({
    style: z.string().default('rule'),
    ground_truth: z.unknown().optional(),
  })
  .catchall(z.unknown());
export type RewardModel = z.infer<typeof RewardModelSchema>;

/**
 * Anything the environment, reward or metrics need beyond the prompt. `index` is the row's stable id
 * (a reader fills in the row number where a file has none). Other keys are kept as they are.
 * @example {"index": 0, "split": "train", "category": "Data", "tools": [...]}
 */
export const ExtraInfoSchema = z
  .object({
    index: z.number().int().nonnegative(),
    split: z.string().optional(),
    /** Tool schemas of this row only; rows without them use the run's configured tools. */
    tools: RowToolsSchema.optional(),
    /** ToolBench category (metrics group by it). */
    category: z.string().optional(),
    /** The prompt template already applied to `prompt` (see shared/data/prompts/), so it is applied once. */
    prompt_type: z.string().optional(),
  })
  .catchall(z.unknown());
export type ExtraInfo = z.infer<typeof ExtraInfoSchema>;

const ROLES_THAT_END_A_PROMPT = new Set(['user', 'tool']);

/**
 * One row of a training or validation dataset.
 * @example {"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "Natalia sold 48 clips…"}],
 *   "ability": "math", "reward_model": {"style": "rule", "ground_truth": "72"},
 *   "extra_info": {"index": 0, "split": "train"}}
 */
export const DatasetRowSchema = z
  .object({
    /** Which dataset the row came from; rewards and metrics dispatch on it. */
    data_source: z.string().min(1),
    /** The chat messages the policy continues; a JSON string of the list is accepted. */
    prompt: z.preprocess(parseJsonString, z.array(ChatMessageSchema).min(1)),
    ability: z.string().optional(),
    reward_model: RewardModelSchema.default({ style: 'rule' }),
    extra_info: ExtraInfoSchema,
  })
  .catchall(z.unknown())
  .superRefine((row, ctx) => {
    const last = row.prompt.at(-1);
    if (last && !ROLES_THAT_END_A_PROMPT.has(last.role)) {
      ctx.addIssue({
        code: 'custom',
        path: ['prompt', row.prompt.length - 1, 'role'],
        message: `the prompt ends with ${/^[aeiou]/.test(last.role) ? 'an' : 'a'} ${last.role} message; the policy answers after the prompt, so it must end with a user (or tool) message`,
      });
    }
  });
export type DatasetRow = z.infer<typeof DatasetRowSchema>;
/** What a row must look like before parsing (defaults may be left out). */
export type DatasetRowInput = z.input<typeof DatasetRowSchema>;
