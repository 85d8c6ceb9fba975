// The names verl, MindSpeed-RL and the seed projects use for toolrl's, in one table: run-config keys (their list is
// key-aliases.ts) and the values they spell differently, tool class names, reward names, prompt types and tool-call
// formats. docs/coming-from.md (linked from the README's "Coming from verl / MindSpeed-RL / TRL") lists every entry
// (a test holds the two together).

/** Where a name comes from, as the README cites it. */
export type AliasOrigin =
  | 'verl'
  | 'MindSpeed-RL'
  | 'Search-R1'
  | 'ToolBench seed'
  | 'EnvTuning'
  | 'toolrl (earlier name)';

/** A run-config key spelled another way: moved to `to`, or, with `to: null`, accepted and dropped with a notice. */
export interface KeyAlias {
  /** Dotted path in the run config as the other system writes it. */
  readonly from: string;
  /** The toolrl path(s) it sets (clip_ratio sets both clip bounds); null: no meaning here. */
  readonly to: string | readonly string[] | null;
  readonly origin: AliasOrigin;
  /** For `to: null`: why nothing is needed (the notice); otherwise what differs, if anything. */
  readonly note?: string;
  /** A conversion of the value (e.g. MindSpeed's token_level_loss: true -> loss_agg_mode: token-mean). */
  readonly value?: (v: unknown) => unknown;
  /** Settings that come with it (Search-R1's max_obs_length counts tokens). */
  readonly with?: Readonly<Record<string, unknown>>;
  /** Applied only where nothing else sets the path (verl's rollout.n under Search-R1's n_agent). */
  readonly soft?: boolean;
}

/** A whole branch of another system's tree that lands on one of ours (`actor_rollout_ref.rollout.` -> `rollout.`). */
export interface PrefixAlias {
  readonly from: string;
  readonly to: string;
  readonly origin: AliasOrigin;
}

/**
 * Top-level sections of verl's and MindSpeed-RL's configs. A key under one of them that the table does not map has
 * no counterpart here: it is accepted and listed in one notice, so a pasted block works as it is. (An unknown key
 * in one of toolrl's own sections is still an error: that is a typo.)
 */
export const FOREIGN_SECTIONS: Readonly<Record<string, AliasOrigin>> = {
  actor_rollout_ref: 'verl',
  critic: 'verl',
  reward_model: 'verl',
  custom_reward_function: 'verl',
  ray_init: 'verl',
  hydra: 'verl',
  defaults: 'verl',
  retriever: 'Search-R1',
  rl_config: 'MindSpeed-RL',
  megatron_training: 'MindSpeed-RL',
  actor_config: 'MindSpeed-RL',
  generate_config: 'MindSpeed-RL',
};

/** Values another system spells differently at a toolrl path (`low_var_kl` -> `k3`). */
export interface ValueAlias {
  readonly path: string;
  readonly from: string | number;
  readonly to: string | number;
  readonly origin: AliasOrigin;
}

/** A tool class of another system that is one of toolrl's built-in tool kinds, with the config it implies. */
export interface ToolClassAlias {
  readonly from: string;
  readonly kind: string;
  /** Settings the class implies (ReTool's code preprocessing); the user's config wins where both set a key. */
  readonly config?: Readonly<Record<string, unknown>>;
  readonly origin: AliasOrigin;
}

/** A config key of one tool kind (`toolbench_url` of the ToolBench seed is the toolbench kind's service_url). */
export interface ToolConfigAlias {
  readonly kind: string;
  readonly from: string;
  /** The kind's own key; null: accepted and dropped (with the reason in `note`). */
  readonly to: string | null;
  readonly origin: AliasOrigin;
  readonly note?: string;
  readonly value?: (v: unknown) => unknown;
}

/** Another system's name for a reward, prompt type or tool-call format. */
export interface NameAlias {
  readonly from: string;
  readonly to: string;
  readonly origin: AliasOrigin;
  readonly note?: string;
}

export const PREFIX_ALIASES: readonly PrefixAlias[] = [
  { from: 'rl_config.', to: '', origin: 'MindSpeed-RL' },
  { from: 'actor_rollout_ref.rollout.multi_turn.', to: 'rollout.multi_turn.', origin: 'verl' },
  { from: 'actor_rollout_ref.rollout.val_kwargs.', to: 'rollout.val_kwargs.', origin: 'verl' },
];

export const VALUE_ALIASES: readonly ValueAlias[] = [
  { path: 'algorithm.adv_estimator', from: 'group_norm', to: 'grpo', origin: 'MindSpeed-RL' },
  { path: 'algorithm.adv_estimator', from: 'reinforce_plus_plus', to: 'reinforce_pp', origin: 'verl' },
  ...(['algorithm.kl_loss_type', 'algorithm.kl_penalty'] as const).flatMap((path) => [
    { path, from: 'low_var_kl', to: 'k3', origin: 'verl' as const },
    { path, from: 'kl', to: 'k1', origin: 'verl' as const },
    { path, from: 'mse', to: 'k2', origin: 'verl' as const },
  ]),
  // verl samples with top_k -1 meaning "off" (vLLM's spelling); off is 0 here
  { path: 'rollout.top_k', from: -1, to: 0, origin: 'verl' },
  { path: 'rollout.val_kwargs.top_k', from: -1, to: 0, origin: 'verl' },
];

/** ReTool's tool strips a ```python fence and prints a trailing expression (MindSpeed-RL, verl's recipe). */
const RETOOL_PREPROCESSING = { strip_code_fence: true, print_last_expression: true } as const;

export const TOOL_CLASS_ALIASES: readonly ToolClassAlias[] = [
  {
    from: 'mindspeed_rl.tools.retool.ReTool',
    kind: 'code_interpreter',
    config: RETOOL_PREPROCESSING,
    origin: 'MindSpeed-RL',
  },
  {
    from: 'mindspeed_rl.tools.sandbox_fusion_tool.SandboxFusionTool',
    kind: 'code_interpreter',
    origin: 'MindSpeed-RL',
  },
  { from: 'mindspeed_rl.tools.search_tool.SearchTool', kind: 'search', origin: 'MindSpeed-RL' },
  { from: 'verl.tools.sandbox_fusion_tools.SandboxFusionTool', kind: 'code_interpreter', origin: 'verl' },
  {
    from: 'recipe.retool.retool.CustomSandboxFusionTool',
    kind: 'code_interpreter',
    config: RETOOL_PREPROCESSING,
    origin: 'verl',
  },
  { from: 'verl.tools.search_tool.SearchTool', kind: 'search', origin: 'verl' },
  // Undotted names, as configs and earlier toolrl versions wrote them
  { from: 'ReTool', kind: 'code_interpreter', config: RETOOL_PREPROCESSING, origin: 'MindSpeed-RL' },
  { from: 'SandboxFusionTool', kind: 'code_interpreter', origin: 'verl' },
  { from: 'SearchTool', kind: 'search', origin: 'verl' },
  ...['sandbox_fusion', 'CodeInterpreterTool', 'python'].map((from) => ({
    from,
    kind: 'code_interpreter',
    origin: 'toolrl (earlier name)' as const,
  })),
  { from: 'CalculatorTool', kind: 'calculator', origin: 'toolrl (earlier name)' },
  ...['weather', 'WeatherTool'].map((from) => ({
    from,
    kind: 'weather_query',
    origin: 'toolrl (earlier name)' as const,
  })),
  ...['time', 'TimeTool'].map((from) => ({
    from,
    kind: 'get_current_time',
    origin: 'toolrl (earlier name)' as const,
  })),
  ...['ToolBenchTool', 'stabletoolbench'].map((from) => ({
    from,
    kind: 'toolbench',
    origin: 'toolrl (earlier name)' as const,
  })),
  ...['HttpTool', 'http_post'].map((from) => ({
    from,
    kind: 'http',
    origin: 'toolrl (earlier name)' as const,
  })),
  ...['BfclTool', 'BFCLTool', 'bfcl_multi_turn'].map((from) => ({
    from,
    kind: 'bfcl',
    origin: 'toolrl (earlier name)' as const,
  })),
];

/** StableToolBench's server root (the seed posts to `<toolbench_url>/virtual`); ours names the endpoint. */
const virtualEndpoint = (v: unknown): unknown =>
  typeof v === 'string' && !/\/virtual\/?$/.test(v) ? `${v.replace(/\/+$/, '')}/virtual` : v;

export const TOOL_CONFIG_ALIASES: readonly ToolConfigAlias[] = [
  {
    kind: 'toolbench',
    from: 'toolbench_url',
    to: 'service_url',
    origin: 'ToolBench seed',
    value: virtualEndpoint,
    note: '`/virtual` is appended to the server root',
  },
  { kind: 'toolbench', from: 'default_category', to: 'category', origin: 'ToolBench seed' },
];

export const REWARD_ALIASES: readonly NameAlias[] = [
  { from: 'retool_reward', to: 'retool', origin: 'MindSpeed-RL' },
  { from: 'toolbench_reward', to: 'toolbench', origin: 'ToolBench seed' },
  { from: 'qa_em', to: 'exact_match', origin: 'Search-R1' },
  {
    from: 'format_reward',
    to: 'format',
    origin: 'EnvTuning',
    note: 'no credit without a call where one is expected',
  },
];

/** The ToolBench seed's reward_model weights, accepted in the `toolbench` reward's config. */
export const REWARD_CONFIG_ALIASES: readonly (NameAlias & { reward: string })[] = [
  { reward: 'toolbench', from: 'format_reward_weight', to: 'format', origin: 'ToolBench seed' },
  { reward: 'toolbench', from: 'function_call_reward_weight', to: 'function_call', origin: 'ToolBench seed' },
  { reward: 'toolbench', from: 'finish_reward_weight', to: 'finish', origin: 'ToolBench seed' },
];

export const PROMPT_TYPE_ALIASES: readonly NameAlias[] = [
  { from: 'qwen_retool', to: 'retool', origin: 'MindSpeed-RL' },
  { from: 'qwen_search_tool', to: 'search', origin: 'MindSpeed-RL' },
  { from: 'search_r1', to: 'search', origin: 'Search-R1' },
];

export const PARSER_ALIASES: readonly NameAlias[] = [
  {
    from: 'qwen',
    to: 'hermes',
    origin: 'EnvTuning',
    note: "verl/SGLang's Qwen parser reads the same <tool_call> JSON",
  },
  { from: 'qwen25', to: 'hermes', origin: 'verl' },
];

const byFrom = <T extends { from: string }>(list: readonly T[]) => new Map(list.map((a) => [a.from, a]));
const TOOL_CLASSES = byFrom(TOOL_CLASS_ALIASES);
const REWARDS = byFrom(REWARD_ALIASES);
const PROMPT_TYPES = byFrom(PROMPT_TYPE_ALIASES);
const PARSERS = byFrom(PARSER_ALIASES);

/**
 * The built-in kind a tool class name stands for, with the config the class implies; undefined for a name that
 * is not in the table (a kind's own name is not an alias: the caller checks those first).
 */
export const toolClassAlias = (name: string): ToolClassAlias | undefined => TOOL_CLASSES.get(name);

/** toolrl's name of a reward, prompt type or tool-call format; the name itself when it is not an alias. */
export const rewardName = (name: string): string => REWARDS.get(name)?.to ?? name;
export const promptTypeName = (name: string): string => PROMPT_TYPES.get(name)?.to ?? name;
export const parserFormatName = (name: string): string => PARSERS.get(name)?.to ?? name;
