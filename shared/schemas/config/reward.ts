// `reward:` of the run config: registered reward functions with weights, user modules, and Python functions.
import { z } from 'zod';

/**
 * One reward: a registered one by `name` (built-in or from `modules`), or with `path` a Python function `name` in
 * that file (relative to the config) with verl's signature `compute_score(data_source, solution_str,
 * ground_truth, extra_info, **config)`. A Python reward is logged as `<file stem>.<name>`.
 */
export const RewardFunctionSpecSchema = z
  .object({
    name: z.string().min(1),
    weight: z.number().default(1),
    config: z.record(z.string(), z.unknown()).default({}),
    path: z
      .string()
      .min(1)
      .optional()
      .describe("A Python file holding the function `name` (run in the reward stage's Python host)."),
    reward_kwargs: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("verl's spelling of `config` for a Python function: keyword arguments passed to every call."),
    timeout: z
      .number()
      .positive()
      .optional()
      .describe(
        'Seconds one call may take (default 60). A Python function is then cancelled (a reward error on the trajectory); a reward from `reward.modules` fails its record, as a throw does. Not for built-ins.',
      ),
    batched: z
      .boolean()
      .optional()
      .describe(
        "Python functions: verl's batched signature (data_sources, solution_strs, ground_truths, extra_infos).",
      ),
  })
  .strict()
  .refine((f) => f.path !== undefined || (f.reward_kwargs === undefined && f.batched === undefined), {
    message: '`reward_kwargs` and `batched` apply to a Python function (`path` + `name`)',
  })
  .refine((f) => f.reward_kwargs === undefined || Object.keys(f.config).length === 0, {
    message: 'give the keyword arguments once: `config` or `reward_kwargs`',
  })
  .meta({
    id: 'RewardFunctionSpec',
    description:
      "One reward: a registered one by `name` (built-in or from `modules`), or with `path` a Python function `name` in that file (relative to the config) with verl's signature `compute_score(data_source, solution_str, ground_truth, extra_info, **config)`. A Python reward is logged as `<file stem>.<name>`.",
  });
export type RewardFunctionSpec = z.infer<typeof RewardFunctionSpecSchema>;

export const RewardConfigSchema = z
  .object({
    functions: z
      .array(RewardFunctionSpecSchema)
      .min(1)
      .default([{ name: 'format', weight: 1, config: {} }]),
    modules: z
      .array(z.string())
      .default([])
      .describe('Modules (paths relative to the config file) that register custom rewards.'),
    python: z
      .string()
      .min(1)
      .optional()
      .describe(
        'Interpreter for Python reward functions (default: TOOLRL_PYTHON, else python3 on the PATH).',
      ),
  })
  .strict()
  .meta({
    id: 'RewardConfig',
    description:
      '`reward:` of the run config: the reward functions, weighted and summed, and the modules that define more.',
  });
export type RewardConfig = z.infer<typeof RewardConfigSchema>;

/** The name a reward's score and components are logged under: `name`, or `<stem>.<name>` for a Python function. */
export function rewardLabel(spec: Pick<RewardFunctionSpec, 'name' | 'path'>): string {
  if (spec.path === undefined) return spec.name;
  const file = spec.path.split(/[\\/]/).pop() ?? spec.path;
  return `${file.replace(/\.py$/, '')}.${spec.name}`;
}
