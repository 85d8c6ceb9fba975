// The multi-turn episode as pure functions over a JSON state: after each assistant turn, decide whether to run
// its tool calls or finish and why; after the calls ran, produce the tool messages and the turn record.
//
// The engine drives it:  startEpisode -> (onAssistantTurn -> [onToolResults -> appendedTokens])* -> episodeOutcome.
// Token counts come from the engine as numbers (no tokenizer here). Finish reasons, checked in this order:
//   `length`                    the turn hit the per-turn token budget (calls in a cut turn are not run);
//                               reported as `max_total_response_length` when that budget is what ran out
//   `eos`                       the turn wrote no tool call (well-formed or not): the model answered
//   `max_total_response_length` generated + appended tokens reached the limit (no room for the results)
//   `max_turns`                 the last allowed turn wrote calls: they are not run, because no turn is left
//                               to read their results (verl's agent loop also stops before them)
//   `max_tool_calls`            the turn wrote calls but the episode's call budget was already used up
//   `error`                     the pipeline gave up on the episode (failEpisode)
// A row with several user turns (BFCL multi-turn, see user-turns.ts) does not finish on `eos` while user turns
// remain: the next user turn is fed as the "results" of a call_tools decision with no calls (`userMessages`),
// unless the turn or token budget is spent (then `max_turns` / `max_total_response_length`).
// A turn with calls and budget left runs at most `max_parallel_calls` of them and at most what is left of
// `max_tool_calls`; the others are not run and come back to the model as tool errors (see planCalls).
import { getParser } from '#shared/parsing/registry';
import type { ParseContext } from '#shared/parsing/types';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { type MultiTurnConfig, MultiTurnConfigSchema } from '#shared/schemas/config/rollout';
import type { ToolCall, ToolCallRecord, ToolError, ToolResult } from '#shared/schemas/tool-result';
import { ToolResultSchema } from '#shared/schemas/tool-result';
import type { FinishReason, TurnRecord } from '#shared/schemas/trajectory';
import {
  type AssistantTurn,
  AssistantTurnSchema,
  type Decision,
  type EpisodeState,
  type Next,
  type PendingTurn,
  type PlannedCall,
  type RejectedCall,
} from './state.ts';
import { parseErrorMessage, toolMessage } from './tool-messages.ts';

export interface StartOptions {
  /** Tokens of the rendered prompt; turn token ranges are offsets from the start of the prompt. */
  promptTokens?: number;
  /** User turns after the prompt (see userTurnsOf), fed one by one when the model ends a turn. */
  userTurns?: ChatMessage[][];
}

/** A fresh episode. An unknown `tool_parser_format` throws here, before any generation. */
export function startEpisode(
  config: Partial<MultiTurnConfig>,
  promptMessages: ChatMessage[],
  opts: StartOptions = {},
): EpisodeState {
  const cfg = MultiTurnConfigSchema.parse(config);
  getParser(cfg.tool_parser_format);
  const state: EpisodeState = {
    config: cfg,
    phase: 'generate',
    promptTokens: opts.promptTokens ?? 0,
    responseTokens: 0,
    toolCallsUsed: 0,
    messages: [...promptMessages],
    turns: [],
    pending: null,
    finishReason: null,
    error: null,
  };
  if (opts.userTurns?.length) {
    if (opts.userTurns.some((t) => t.length === 0))
      throw new Error('startEpisode: a user turn has no messages');
    return { ...state, userTurns: opts.userTurns.map((t) => [...t]), userTurn: 0 };
  }
  return state;
}

/** The messages of the user turn after the current one, or null when none is left. */
const nextUserTurn = (state: EpisodeState): ChatMessage[] | null =>
  state.userTurns?.[state.userTurn ?? 0] ?? null;

/** Tokens the next turn may still generate or append under `max_total_response_length`. */
export const responseBudget = (state: EpisodeState): number =>
  Math.max(0, state.config.max_total_response_length - state.responseTokens);

function expectPhase(state: EpisodeState, phase: EpisodeState['phase'], fn: string): void {
  if (state.phase !== phase) {
    throw new Error(`${fn} called in phase ${state.phase}; it needs phase ${phase}`);
  }
}

const notRun = (error: ToolError): ToolResult => ({ ok: false, output: '', error, truncated: false });

/**
 * Which calls run. Calls past `max_parallel_calls` in this turn or past what is left of `max_tool_calls` are
 * not run, but they stay in the record and each gets an error as its result, rather than being dropped:
 * the model wrote them, so its next turn sees a result for every call it made (chat templates pair results
 * with calls by position) and learns that it went over a limit; the rewards can count them too.
 */
function planCalls(calls: ToolCall[], cfg: MultiTurnConfig, used: number): PlannedCall[] {
  const left = cfg.max_tool_calls - used;
  return calls.map((call, i) => {
    let rejection: ToolError | null = null;
    if (i >= cfg.max_parallel_calls) {
      rejection = {
        type: 'resource_limit',
        message: `not executed: this turn made ${calls.length} tool calls and at most max_parallel_calls=${cfg.max_parallel_calls} run per turn`,
      };
    } else if (i >= left) {
      rejection = {
        type: 'resource_limit',
        message: `not executed: the episode's budget of max_tool_calls=${cfg.max_tool_calls} is used up`,
      };
    }
    return { name: call.name, arguments: call.arguments, rejection };
  });
}

function finishReasonOf(
  state: EpisodeState,
  turn: { stop: string; index: number },
  calls: number,
  attempts: number,
  responseTokens: number,
): FinishReason | null {
  const cfg = state.config;
  const outOfTokens = responseTokens >= cfg.max_total_response_length;
  if (turn.stop === 'length') return outOfTokens ? 'max_total_response_length' : 'length';
  if (attempts === 0) return 'eos';
  if (outOfTokens) return 'max_total_response_length';
  if (turn.index + 1 >= cfg.max_turns) return 'max_turns';
  if (calls > 0 && state.toolCallsUsed >= cfg.max_tool_calls) return 'max_tool_calls';
  return null;
}

/** What the parser of the run's format reads besides the text: the offered tools and the code-block settings. */
export const parseContext = (config: MultiTurnConfig, tools?: readonly ToolSchema[]): ParseContext => ({
  ...(tools ? { tools } : {}),
  codeBlock: config.code_block,
});

/**
 * Records a generated turn and decides what happens next. `tools` are the tool schemas offered to the model: formats
 * whose argument values are text (qwen3_coder) convert them by these.
 */
export function onAssistantTurn(
  state: EpisodeState,
  input: AssistantTurn,
  opts: { tools?: readonly ToolSchema[] } = {},
): { state: EpisodeState; decision: Decision } {
  expectPhase(state, 'generate', 'onAssistantTurn');
  const turn = AssistantTurnSchema.parse(input);
  const parser = getParser(state.config.tool_parser_format);
  const parsed = parser.parse(turn.text, parseContext(state.config, opts.tools));
  const index = state.turns.length;
  const tokenStart = state.promptTokens + state.responseTokens;
  const responseTokens = state.responseTokens + turn.generatedTokens;
  const record: PendingTurn['record'] = {
    turn: index,
    policyVersion: turn.policyVersion,
    text: turn.text,
    content: parsed.content,
    parseErrors: parsed.errors.map((e) => ({ message: e.message })),
    stop: turn.stop,
    tokenStart,
    tokenEnd: tokenStart + turn.generatedTokens,
  };
  const assistant: ChatMessage = { role: 'assistant', content: parsed.content };
  // Inline formats (code blocks) keep the calls in the text: the template has no tool_calls to render.
  if (parsed.calls.length > 0 && !parser.inline) {
    assistant.tool_calls = parsed.calls.map((c) => ({
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  const next = { ...state, responseTokens, messages: [...state.messages, assistant] };

  const attempts = parsed.calls.length + parsed.errors.length;
  const reason = finishReasonOf(
    state,
    { stop: turn.stop, index },
    parsed.calls.length,
    attempts,
    responseTokens,
  );
  const userMessages = reason === 'eos' ? nextUserTurn(state) : null;
  if (userMessages) {
    // The model answered this user turn; the next one follows unless no turn or token is left for it.
    const spent =
      responseTokens >= state.config.max_total_response_length
        ? 'max_total_response_length'
        : index + 1 >= state.config.max_turns
          ? 'max_turns'
          : null;
    if (spent === null) {
      return {
        state: {
          ...next,
          phase: 'tools',
          pending: { record, plan: [], userMessages },
          userTurn: (state.userTurn ?? 0) + 1,
        },
        decision: { kind: 'call_tools', calls: [], rejected: [], userMessages },
      };
    }
    return {
      state: {
        ...next,
        phase: 'done',
        turns: [...state.turns, { ...record, toolCalls: [] }],
        finishReason: spent,
      },
      decision: { kind: 'finish', reason: spent },
    };
  }
  if (reason !== null) {
    const error: ToolError = {
      type: 'resource_limit',
      message: `not executed: the episode ended (${reason})`,
    };
    const toolCalls = parsed.calls.map((c) => ({ ...c, result: notRun(error), durationMs: 0 }));
    return {
      state: {
        ...next,
        phase: 'done',
        turns: [...state.turns, { ...record, toolCalls }],
        finishReason: reason,
      },
      decision: { kind: 'finish', reason },
    };
  }

  const plan = planCalls(parsed.calls, state.config, state.toolCallsUsed);
  const run = plan.filter((p) => p.rejection === null);
  const rejected: RejectedCall[] = [];
  plan.forEach((p, i) => {
    if (p.rejection) rejected.push({ index: i, name: p.name, arguments: p.arguments, error: p.rejection });
  });
  return {
    state: {
      ...next,
      phase: 'tools',
      toolCallsUsed: state.toolCallsUsed + run.length,
      pending: { record, plan },
    },
    decision: {
      kind: 'call_tools',
      calls: run.map((p) => ({ name: p.name, arguments: p.arguments })),
      rejected,
    },
  };
}

export type TimedToolResult = ToolResult & { durationMs?: number };

/**
 * Takes the results of the calls of the last `call_tools` decision, in its order, and returns the messages to
 * append (one tool message per call the model wrote, then one listing any malformed calls, or the next user
 * turn when the model ended one) and the turn record.
 * A result count that does not match the decision is a bug in the caller and throws.
 */
export function onToolResults(
  state: EpisodeState,
  results: TimedToolResult[],
): { state: EpisodeState; toolMessages: ChatMessage[]; turn: TurnRecord } {
  expectPhase(state, 'tools', 'onToolResults');
  const pending = state.pending!;
  const expected = pending.plan.filter((p) => p.rejection === null).length;
  if (results.length !== expected) {
    throw new Error(
      `onToolResults: expected ${expected} results (one per executed call, in order), got ${results.length}`,
    );
  }
  let k = 0;
  const toolCalls: ToolCallRecord[] = pending.plan.map((p) => {
    if (p.rejection)
      return { name: p.name, arguments: p.arguments, result: notRun(p.rejection), durationMs: 0 };
    const { durationMs = 0, ...result } = results[k++]!;
    return { name: p.name, arguments: p.arguments, result: ToolResultSchema.parse(result), durationMs };
  });
  const wrapper =
    state.config.tool_parser_format === 'code_block' ? state.config.code_block.output_wrapper : undefined;
  const toolMessages = toolCalls.map((c) => toolMessage(c.name, c.result, wrapper));
  if (pending.record.parseErrors.length > 0) toolMessages.push(parseErrorMessage(pending.record.parseErrors));
  if (pending.userMessages) toolMessages.push(...pending.userMessages);
  const turn: TurnRecord = { ...pending.record, toolCalls };
  return {
    state: {
      ...state,
      phase: 'append',
      pending: null,
      turns: [...state.turns, turn],
      messages: [...state.messages, ...toolMessages],
    },
    toolMessages,
    turn,
  };
}

/**
 * The engine appended the tool messages as `tokens` tokens (the chat template's delta, up to the next
 * assistant header). Finishes with `max_total_response_length` when no room is left to generate.
 */
export function appendedTokens(state: EpisodeState, tokens: number): { state: EpisodeState; next: Next } {
  expectPhase(state, 'append', 'appendedTokens');
  if (!Number.isInteger(tokens) || tokens < 0)
    throw new Error(`appendedTokens: ${tokens} is not a token count`);
  const responseTokens = state.responseTokens + tokens;
  const next = { ...state, responseTokens };
  if (responseTokens >= state.config.max_total_response_length) {
    return {
      state: { ...next, phase: 'done', finishReason: 'max_total_response_length' },
      next: { kind: 'finish', reason: 'max_total_response_length' },
    };
  }
  return {
    state: { ...next, phase: 'generate' },
    next: { kind: 'generate', maxNewTokens: responseBudget(next) },
  };
}

/** Ends the episode with `error` (e.g. the tool stage gave up); calls still out are recorded as failed. */
export function failEpisode(state: EpisodeState, message: string): EpisodeState {
  if (state.phase === 'done')
    throw new Error(`failEpisode: the episode already finished (${state.finishReason})`);
  const turns = [...state.turns];
  if (state.pending) {
    const error: ToolError = { type: 'internal_error', message: `not executed: ${message}` };
    const toolCalls = state.pending.plan.map((p) => ({
      name: p.name,
      arguments: p.arguments,
      result: notRun(p.rejection ?? error),
      durationMs: 0,
    }));
    turns.push({ ...state.pending.record, toolCalls });
  }
  return { ...state, phase: 'done', pending: null, turns, finishReason: 'error', error: message };
}

/** The parts of a RolloutTrajectory the episode owns. Throws if the episode has not finished. */
export function episodeOutcome(state: EpisodeState): {
  finishReason: FinishReason;
  turns: TurnRecord[];
  messages: ChatMessage[];
  error: string | null;
} {
  if (state.phase !== 'done' || state.finishReason === null) {
    throw new Error(`episodeOutcome: the episode is still in phase ${state.phase}`);
  }
  return {
    finishReason: state.finishReason,
    turns: state.turns,
    messages: state.messages,
    error: state.error,
  };
}
