// The types an agent episode is built from and hands back (episode.ts): what it needs of the rollout engine, its
// options, how the agent's call ended, and the finished episode the reward stage reads.
import type { TurnSample } from '#shared/policy/policy';
import type { SamplingParams } from '#shared/policy/sampler';
import type { TokenState } from '#shared/policy/token-state';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { MultiTurnConfig } from '#shared/schemas/config/rollout';
import type { EpisodeState } from '#shared/schemas/episode-state';
import type { ToolResult } from '#shared/schemas/tool-result';
import type { TrajectorySegment, TurnRecord } from '#shared/schemas/trajectory';

/** What an episode needs of the rollout engine (the stage backs it with the run's current policy). */
export interface AgentEngine {
  /** A conversation rendered with the run's chat template and the generation prompt, and its token ids. */
  prompt(
    messages: readonly ChatMessage[],
    tools: readonly ToolSchema[],
  ): Promise<{ text: string; ids: number[] }>;
  /**
   * Appends `messages` to `state` as the template's delta and samples one turn (Policy.continueTrajectory); throws
   * PrefixBreakError when the template does not extend the tokens held. `version` sampled it.
   */
  sample(
    state: TokenState,
    messages: readonly ChatMessage[],
    s: SamplingParams,
  ): Promise<{ state: TokenState; sample: TurnSample; budgetExhausted: boolean; version: number }>;
}

export interface AgentEpisodeOptions {
  /** Names the episode in call ids and completion ids. */
  readonly id: string;
  /** What replies name as their model. */
  readonly model: string;
  readonly sampleIndex: number;
  /** The run's sampling (temperature, top-p, seed, per-turn budget): a request cannot change what trains. */
  readonly sampling: SamplingParams;
  /** The limits and the tool-call format (`rollout.multi_turn`). */
  readonly multiTurn: MultiTurnConfig;
  /** The first request's prompt may have at most this many tokens (`data.max_prompt_length`). */
  readonly maxPromptLength: number;
  /** Epoch milliseconds past which requests are refused and the episode ends with `timeout`. */
  readonly deadline: number;
  readonly now?: () => number;
}

/** How the agent's call ended. */
export type AgentEnd =
  | { kind: 'returned'; answer: string | null; output: unknown }
  | { kind: 'error'; message: string }
  | { kind: 'timeout'; message: string };

export interface CallDraft {
  id: string;
  name: string;
  arguments: unknown;
  result: ToolResult | null;
}

export interface TurnDraft {
  record: Omit<TurnRecord, 'toolCalls'>;
  calls: CallDraft[];
}

export interface Segment {
  tokens: TokenState;
  /** The conversation the agent must send back to continue this segment: one key per message (messageKey). */
  view: string[];
  toolsKey: string;
  /** Tool call ids of this segment's replies -> the tool's name. */
  callNames: Map<string, string>;
  /** Index of this segment's first turn among the episode's turns. */
  turnStart: number;
  /** Why the episode left this segment for the next (set when it does). */
  endReason?: string;
}

export interface FinishedEpisode {
  tokens: TokenState;
  episode: EpisodeState;
  segments: TrajectorySegment[];
}
