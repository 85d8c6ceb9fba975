// What a reward reads: the turns of a finished episode, why it ended, and the row's ground truth. Built by the
// pipeline from a trajectory, or read from a JSON file a user wrote by hand (`toolrl reward score`).
import { z } from 'zod';
import { parseToolCalls } from '#shared/parsing/registry';
import { type ChatMessage, ChatMessageSchema } from '#shared/schemas/chat';
import { ToolErrorSchema, type ToolResult } from '#shared/schemas/tool-result';
import {
  type FinishReason,
  FinishReasonSchema,
  type TurnRecord,
  TurnStopSchema,
} from '#shared/schemas/trajectory';

/** A call as rewards see it; `result` is null when the input did not say (hand-written, calls parsed from text). */
export interface ScoredCall {
  name: string;
  arguments: unknown;
  result: ToolResult | null;
}

export interface RewardTurn {
  text: string;
  /** Text outside tool calls: where the final answer is read from. */
  content: string;
  calls: ScoredCall[];
  parseErrors: { message: string }[];
  stop: 'eos' | 'tool_call' | 'length';
}

/** The normalised input every reward function receives. */
export interface RewardInput {
  turns: RewardTurn[];
  finishReason: FinishReason;
  /** The row's `reward_model.ground_truth` as it is (string, number, list, object); null when there is none. */
  groundTruth: unknown;
  /** Names of the tools offered to the model; null when unknown. */
  tools: string[] | null;
  dataSource: string | null;
  extraInfo: Record<string, unknown>;
  messages: ChatMessage[];
  /** The final reward of each stateful tool the episode called (verl's calc_reward), by tool name. */
  toolRewards?: Record<string, number>;
}

const LenientToolResultSchema = z.object({
  ok: z.boolean(),
  output: z.string().default(''),
  error: ToolErrorSchema.nullable().default(null),
  truncated: z.boolean().default(false),
  reward: z.number().optional(),
  metrics: z.record(z.string(), z.unknown()).optional(),
});

const LenientTurnSchema = z.looseObject({
  text: z.string(),
  content: z.string().optional(),
  toolCalls: z
    .array(
      z.looseObject({ name: z.string(), arguments: z.unknown(), result: LenientToolResultSchema.optional() }),
    )
    .optional(),
  parseErrors: z.array(z.looseObject({ message: z.string() })).optional(),
  stop: TurnStopSchema.default('eos'),
});

const ToolNamesSchema = z.array(
  z.union([z.string(), z.looseObject({ function: z.looseObject({ name: z.string() }) })]),
);

/**
 * A reward input file. Either hand-written — only `turns[].text` is required:
 * @example {"ground_truth": "391", "turns": [
 *   {"text": "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"expression\": \"17*23\"}}</tool_call>",
 *    "toolCalls": [{"name": "calculator", "arguments": {"expression": "17*23"}, "result": {"ok": true, "output": "391"}}]},
 *   {"text": "17 * 23 = \\boxed{391}"}]}
 * — or a pipeline trajectory (RolloutTrajectory, Trajectory, TrajectoryInFlight) plus `ground_truth`; other
 * keys (tokenIds, lossMask, …) are ignored. Where a turn leaves out `content` or `parseErrors`, they are
 * parsed from `text`; where it leaves out `toolCalls`, the calls parsed from `text` count with unknown results.
 * snake_case spellings (`ground_truth`, `finish_reason`, `data_source`, `extra_info`) are accepted as they
 * appear in verl rows; without `ground_truth`, a trajectory's `row.reward_model.ground_truth` is used.
 */
export const RewardInputFileSchema = z.looseObject({
  turns: z.array(LenientTurnSchema),
  finishReason: FinishReasonSchema.optional(),
  finish_reason: FinishReasonSchema.optional(),
  ground_truth: z.unknown().optional(),
  groundTruth: z.unknown().optional(),
  tools: ToolNamesSchema.optional(),
  dataSource: z.string().optional(),
  data_source: z.string().optional(),
  extraInfo: z.record(z.string(), z.unknown()).optional(),
  extra_info: z.record(z.string(), z.unknown()).optional(),
  messages: z.array(ChatMessageSchema).optional(),
  row: z.record(z.string(), z.unknown()).optional(),
  toolRewards: z.record(z.string(), z.number()).optional(),
  tool_rewards: z.record(z.string(), z.number()).optional(),
});
export type RewardInputFile = z.input<typeof RewardInputFileSchema>;

const toolNames = (tools: z.infer<typeof ToolNamesSchema> | undefined): string[] | null =>
  tools ? tools.map((t) => (typeof t === 'string' ? t : t.function.name)) : null;

/** One value given under two spellings must not disagree; the error names both. */
function either<T>(a: T | undefined, b: T | undefined, names: string): T | undefined {
  if (a !== undefined && b !== undefined && JSON.stringify(a) !== JSON.stringify(b)) {
    throw new Error(`reward input gives both ${names} with different values; keep one`);
  }
  return a ?? b;
}

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

function normaliseTurn(turn: z.infer<typeof LenientTurnSchema>, format: string): RewardTurn {
  const needParse =
    turn.content === undefined || turn.parseErrors === undefined || turn.toolCalls === undefined;
  const parsed = needParse ? parseToolCalls(turn.text, format) : null;
  const calls: ScoredCall[] = turn.toolCalls
    ? turn.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments ?? {}, result: c.result ?? null }))
    : parsed!.calls.map((c) => ({ ...c, result: null }));
  return {
    text: turn.text,
    content: turn.content ?? parsed!.content,
    calls,
    parseErrors: (turn.parseErrors ?? parsed!.errors).map((e) => ({ message: e.message })),
    stop: turn.stop,
  };
}

/**
 * Validates and normalises a reward input file (or any object of that shape). Throws a zod error naming the
 * bad field, or an Error for contradicting spellings. `format` is the tool-call format used to parse turns.
 */
export function normaliseRewardInput(raw: unknown, format = 'hermes'): RewardInput {
  const f = RewardInputFileSchema.parse(raw);
  const rowGroundTruth = asRecord(asRecord(f.row)?.['reward_model'])?.['ground_truth'];
  const rowExtra = asRecord(asRecord(f.row)?.['extra_info']);
  const rowSource = asRecord(f.row)?.['data_source'];
  const groundTruth =
    either(f.ground_truth, f.groundTruth, '`ground_truth` and `groundTruth`') ?? rowGroundTruth;
  return {
    turns: f.turns.map((t) => normaliseTurn(t, format)),
    finishReason: either(f.finishReason, f.finish_reason, '`finishReason` and `finish_reason`') ?? 'eos',
    groundTruth: groundTruth ?? null,
    tools: toolNames(f.tools),
    dataSource:
      either(f.dataSource, f.data_source, '`dataSource` and `data_source`') ??
      (typeof rowSource === 'string' ? rowSource : null),
    extraInfo: either(f.extraInfo, f.extra_info, '`extraInfo` and `extra_info`') ?? rowExtra ?? {},
    messages: f.messages ?? [],
    ...((f.toolRewards ?? f.tool_rewards)
      ? { toolRewards: either(f.toolRewards, f.tool_rewards, '`toolRewards` and `tool_rewards`') }
      : {}),
  };
}

/** What the pipeline knows about the row when it scores a trajectory. */
export interface RewardContext {
  groundTruth?: unknown;
  dataSource?: string | null;
  extraInfo?: Record<string, unknown>;
  /** Tool schemas offered to the model, or their names. */
  tools?: (string | { function: { name: string } })[] | null;
  /** The stateful tools' final rewards (calc_reward), by tool name. */
  toolRewards?: Record<string, number>;
}

/** The reward input of a finished pipeline trajectory: its turns already carry content, errors and results. */
export function rewardInputFromTrajectory(
  trajectory: { turns: TurnRecord[]; finishReason: FinishReason; messages?: ChatMessage[] },
  ctx: RewardContext = {},
): RewardInput {
  return {
    turns: trajectory.turns.map((t) => ({
      text: t.text,
      content: t.content,
      calls: t.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments, result: c.result })),
      parseErrors: t.parseErrors.map((e) => ({ message: e.message })),
      stop: t.stop,
    })),
    finishReason: trajectory.finishReason,
    groundTruth: ctx.groundTruth ?? null,
    tools: ctx.tools ? ctx.tools.map((t) => (typeof t === 'string' ? t : t.function.name)) : null,
    dataSource: ctx.dataSource ?? null,
    extraInfo: ctx.extraInfo ?? {},
    messages: trajectory.messages ?? [],
    ...(ctx.toolRewards ? { toolRewards: ctx.toolRewards } : {}),
  };
}
