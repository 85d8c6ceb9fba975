// `rollout:` of the run config: sampling and the multi-turn limits (names as verl's multi_turn block).
import { z } from 'zod';

/**
 * The `code_block` format's settings: which tool a ```python block goes to, which fence languages run, and how each
 * output is wrapped in the tool message the model reads (`{output}` is replaced by it). The default wrapper is
 * ToolGRPO's; ReTool's is `<interpreter>\n{output}\n</interpreter>`.
 */
export const CodeBlockConfigSchema = z
  .object({
    tool: z.string().min(1).default('code_interpreter'),
    argument: z.string().min(1).default('code'),
    languages: z.array(z.string().min(1)).min(1).default(['python', 'py', 'python3']),
    output_wrapper: z
      .string()
      .default('```output\n{output}\n```')
      .refine((w) => w.includes('{output}'), { message: 'output_wrapper must contain {output}' }),
  })
  .strict()
  .meta({
    id: 'CodeBlockConfig',
    description:
      "The `code_block` format's settings: which tool a ```python block goes to, which fence languages run, and how each output is wrapped in the tool message the model reads (`{output}` is replaced by it). The default wrapper is ToolGRPO's; ReTool's is `<interpreter>\\n{output}\\n</interpreter>`.",
  });
export type CodeBlockConfig = z.infer<typeof CodeBlockConfigSchema>;

export const MultiTurnConfigSchema = z
  .object({
    max_turns: z.number().int().positive().default(4).describe('Assistant turns per episode.'),
    max_tool_calls: z
      .number()
      .int()
      .nonnegative()
      .default(4)
      .describe('Tool calls per episode, summed over turns.'),
    max_parallel_calls: z
      .number()
      .int()
      .positive()
      .default(2)
      .describe('Tool calls executed from one assistant turn; extra calls become tool errors.'),
    max_total_response_length: z
      .number()
      .int()
      .positive()
      .default(1024)
      .describe('Generated + appended tokens after the prompt.'),
    max_tool_response_length: z
      .number()
      .int()
      .positive()
      .default(256)
      .describe('A tool result longer than this (in `tool_response_truncate_unit`s) is truncated.'),
    tool_response_truncate_side: z
      .enum(['left', 'right', 'middle'])
      .default('middle')
      .describe(
        'As verl and MindSpeed-RL: `left` keeps the start (`text[:max] + "...(truncated)"`), `right` keeps the end (`"(truncated)..." + text[-max:]`), `middle` keeps max/2 of each end around `...(truncated)...`.',
      ),
    tool_response_truncate_unit: z
      .enum(['characters', 'tokens'])
      .default('characters')
      .describe(
        "What max_tool_response_length counts: `characters` (verl's and MindSpeed-RL's unit), or `tokens` of the run's tokenizer (policy v0's; characters until it is published).",
      ),
    tool_parser_format: z
      .string()
      .default('hermes')
      .describe(
        "`hermes`, `react`, `qwen3_coder` or `code_block` (shared/parsing; other systems' names through the alias table).",
      ),
    code_block: CodeBlockConfigSchema.default(CodeBlockConfigSchema.parse({})),
  })
  .strict()
  .meta({
    id: 'MultiTurnConfig',
    description:
      "`rollout.multi_turn:` the episode's limits (names as verl's multi_turn block) and the tool-call format.",
  });
export type MultiTurnConfig = z.infer<typeof MultiTurnConfigSchema>;

/**
 * How validation rollouts sample (verl's `val_kwargs`): greedy, one per prompt, by default; with a temperature and
 * n > 1, the validation metrics are means over n samples per prompt (mean@n, as DAPO and others report).
 */
export const ValKwargsSchema = z
  .object({
    temperature: z
      .number()
      .nonnegative()
      .default(0)
      .describe("0: greedy decoding (verl's do_sample: false)."),
    top_p: z.number().gt(0).max(1).default(1.0),
    top_k: z.number().int().nonnegative().default(0),
    n: z.number().int().positive().default(1).describe('Samples per validation prompt.'),
  })
  .strict()
  .refine((v) => v.temperature > 0 || v.n === 1, {
    message: 'greedy validation (temperature 0) gives n identical samples: set a temperature or n: 1',
    path: ['n'],
  })
  .meta({
    id: 'ValKwargs',
    description:
      "How validation rollouts sample (verl's `val_kwargs`): greedy, one per prompt, by default; with a temperature and n > 1, the validation metrics are means over n samples per prompt (mean@n, as DAPO and others report).",
  });
export type ValKwargs = z.infer<typeof ValKwargsSchema>;

/** What an agent file may be: Python (run in the agent host) or a TypeScript / JavaScript module (run in-process). */
export const AGENT_FILE_EXTENSIONS = ['.py', '.ts', '.mts', '.js', '.mjs'] as const;

/**
 * `rollout.agent`: the user's own agent runs each episode (shared/agent). `name` in `path` is an async function
 * called with keyword arguments `base_url` and `model` (the episode's OpenAI-compatible endpoint), `messages` (the
 * row's prompt), `tools` (the run's tool schemas, OpenAI format), `extra_info` (the row's), `sample_index`,
 * `episode_id` and `kwargs`' entries; it runs its own tools and returns when the episode is done.
 * @example {"path": "agents/calculator_agent.py", "name": "run", "timeout": 120}
 */
export const AgentConfigSchema = z
  .object({
    /** The agent's file, relative to the config: `.py` runs in the agent's Python host, `.ts`/`.js` in-process. */
    path: z
      .string()
      .min(1)
      .refine((p) => AGENT_FILE_EXTENSIONS.some((e) => p.endsWith(e)), {
        message: `an agent file ends in ${AGENT_FILE_EXTENSIONS.join(', ')}`,
      }),
    /** The function in it. */
    name: z.string().min(1).default('run'),
    /** Wall-clock seconds per episode; past it the agent is cancelled and the episode ends with `timeout`. */
    timeout: z.number().positive().default(600),
    /**
     * Episodes running at once per process (all of them share its agent host's event loop and its rollout engine);
     * the others wait for a slot, and an episode's clock starts when it gets one.
     */
    max_concurrency: z.number().int().positive().default(32),
    /** More keyword arguments for every call (JSON values). */
    kwargs: z.record(z.string(), z.unknown()).default({}),
    /** The Python agent's interpreter (default: TOOLRL_PYTHON, else the agent environment `npm run setup` made). */
    python: z.string().min(1).optional(),
  })
  .strict();
export type AgentConfig = z.infer<typeof AgentConfigSchema>;

export const RolloutConfigSchema = z
  .object({
    n: z.number().int().positive().default(8).describe("G: samples per prompt (TRL's num_generations)."),
    temperature: z
      .number()
      .positive()
      .default(1.0)
      .describe(
        "Sampling temperature; the behaviour log-probs (and the learner's) are of logits / temperature.",
      ),
    top_p: z.number().gt(0).max(1).default(1.0).describe('Nucleus sampling; 1 disables it.'),
    top_k: z.number().int().nonnegative().default(0).describe('0 disables top-k.'),
    max_new_tokens: z.number().int().positive().default(256).describe('Per-turn token budget.'),
    seed: z.number().int().nonnegative().default(0).describe("The sampler's seed."),
    multi_turn: MultiTurnConfigSchema.default(MultiTurnConfigSchema.parse({})),
    val_kwargs: ValKwargsSchema.default(ValKwargsSchema.parse({})),
    enable_prefix_caching: z
      .boolean()
      .default(false)
      .describe(
        "verl's name: prefill the head every prompt shares (system messages and tool schemas) once per policy version and start each prompt from its cache. Faster when the head is most of the prompt; it rounds differently from one pass over the prompt, so a deterministic run's numbers change when it is turned on.",
      ),
    /** Bring your own agent: it drives each episode through an OpenAI-compatible endpoint (AgentConfigSchema). */
    agent: AgentConfigSchema.optional(),
  })
  .strict()
  .meta({
    id: 'RolloutConfig',
    description:
      '`rollout:` of the run config: sampling (the behaviour log-probs are of logits / temperature) and the multi-turn limits.',
  });
export type RolloutConfig = z.infer<typeof RolloutConfigSchema>;
