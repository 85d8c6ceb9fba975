// Token in, token out: how a trajectory's tokens grow. Sampled tokens are appended as sampled (loss mask 1);
// tool results are appended as the chat template's delta (mask 0), never by re-tokenising generated text.
// Every append re-renders the conversation and checks that it extends the text of the tokens already held.
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { TurnStop } from '#shared/schemas/trajectory';
import type { PrefixCheck, TokenState } from './token-state.ts';
import type { ChatTokenizer } from './tokenizer.ts';

/** The template no longer extends the tokens held: continuing would train on tokens the model never saw. */
export class PrefixBreakError extends Error {
  override name = 'PrefixBreakError';
  constructor(
    readonly check: PrefixCheck,
    /** The state with the failed check recorded. */
    readonly state: TokenState,
  ) {
    super(
      `chat template does not extend the trajectory's tokens (sample ${state.sampleIndex}, turn ${check.turn}): ` +
        `at character ${check.offset} the tokens say ${JSON.stringify(check.held)} but the template renders ` +
        `${JSON.stringify(check.rendered)}. The template rewrites earlier turns (dropped <think> blocks, ` +
        `trimmed or re-spaced content); give the policy a template that renders history verbatim.`,
    );
  }
}

export function startState(args: {
  sampleIndex: number;
  seed: number;
  messages: readonly ChatMessage[];
  tools: readonly ToolSchema[];
  promptText: string;
  promptIds: readonly number[];
}): TokenState {
  const n = args.promptIds.length;
  return {
    schemaVersion: 1,
    sampleIndex: args.sampleIndex,
    seed: args.seed,
    tokenIds: [...args.promptIds],
    promptLength: n,
    lossMask: new Array(n).fill(0),
    behaviorLogprobs: new Array(n).fill(0),
    policyVersions: new Array(n).fill(-1),
    messages: args.messages.map((m) => ({ ...m })),
    tools: args.tools.map((t) => ({ ...t })),
    text: args.promptText,
    turns: [],
    prefixChecks: [],
    cacheKey: null,
  };
}

export interface SampledTurn {
  tokenIds: readonly number[];
  logprobs: readonly number[];
  stop: TurnStop;
}

/**
 * The assistant content of a turn: its sampled tokens decoded, without a final EOS token (the template writes
 * that itself when it renders the message).
 */
export function turnContent(tok: ChatTokenizer, ids: readonly number[], stop: TurnStop): string {
  return tok.decode(stop === 'eos' ? ids.slice(0, -1) : ids);
}

/** Appends one sampled turn: tokens exactly as sampled, mask 1, their log-probs and the policy version. */
export function appendTurn(
  state: TokenState,
  turn: SampledTurn,
  policyVersion: number,
  tok: ChatTokenizer,
): TokenState {
  const ids = turn.tokenIds;
  if (turn.logprobs.length !== ids.length)
    throw new Error(`turn has ${ids.length} tokens but ${turn.logprobs.length} log-probs`);
  const content = turnContent(tok, ids, turn.stop);
  const eosText = turn.stop === 'eos' && ids.length > 0 ? tok.piece(ids[ids.length - 1]!) : '';
  const start = state.tokenIds.length;
  return {
    ...state,
    tokenIds: [...state.tokenIds, ...ids],
    lossMask: [...state.lossMask, ...ids.map(() => 1 as const)],
    behaviorLogprobs: [...state.behaviorLogprobs, ...turn.logprobs],
    policyVersions: [...state.policyVersions, ...ids.map(() => policyVersion)],
    messages: [...state.messages, { role: 'assistant', content }],
    text: state.text + content + eosText,
    turns: [
      ...state.turns,
      {
        turn: state.turns.length,
        policyVersion,
        tokenStart: start,
        tokenEnd: start + ids.length,
        stop: turn.stop,
        text: content,
      },
    ],
  };
}

const SNIPPET = 40;

/** Where two strings part, or -1 when `held` is a prefix of `rendered`. */
function firstDifference(held: string, rendered: string): number {
  const n = Math.min(held.length, rendered.length);
  for (let i = 0; i < n; i++) if (held.charCodeAt(i) !== rendered.charCodeAt(i)) return i;
  return held.length <= rendered.length ? -1 : n;
}

/**
 * The text to check the new rendering against. A turn that stopped on an EOS other than the one the template
 * closes turns with (`<|endoftext|>` where it writes `<|im_end|>`) still ends the turn: that sampled token stands
 * for the template's marker, so the tokens keep what was sampled and the delta starts after the marker.
 */
function eosStandIn(
  state: TokenState,
  rendered: string,
  tok: ChatTokenizer,
  eosIds: ReadonlySet<number>,
): { text: string; eosAs?: string } {
  const last = state.turns.at(-1);
  if (last?.stop !== 'eos' || rendered.startsWith(state.text)) return { text: state.text };
  const sampled = tok.piece(state.tokenIds[last.tokenEnd - 1]!);
  if (!state.text.endsWith(sampled)) return { text: state.text };
  const base = state.text.slice(0, state.text.length - sampled.length);
  for (const id of eosIds) {
    const marker = tok.piece(id);
    if (marker.length > 0 && rendered.startsWith(base + marker))
      return { text: base + marker, eosAs: marker };
  }
  return { text: state.text };
}

/**
 * Appends messages (tool results, or a user turn) and the next assistant header as the template's delta:
 * render the whole conversation with the generation prompt, check that it starts with the text of the tokens
 * held, and tokenise only what it adds. Throws PrefixBreakError (carrying the state with the failed check) when
 * the rendering does not extend what we hold.
 */
export function appendMessages(
  state: TokenState,
  messages: readonly ChatMessage[],
  tok: ChatTokenizer,
  eosIds: ReadonlySet<number> = new Set(),
): { state: TokenState; deltaIds: number[] } {
  const all = [...state.messages, ...messages.map((m) => ({ ...m }))];
  const rendered = tok.render(all, state.tools, { addGenerationPrompt: true });
  const turn = state.turns.length;
  const held = eosStandIn(state, rendered, tok, eosIds);
  const at = firstDifference(held.text, rendered);
  if (at >= 0) {
    const check: PrefixCheck = {
      turn,
      ok: false,
      offset: at,
      held: state.text.slice(at, at + SNIPPET),
      rendered: rendered.slice(at, at + SNIPPET),
    };
    throw new PrefixBreakError(check, { ...state, prefixChecks: [...state.prefixChecks, check] });
  }
  const deltaIds = tok.encode(rendered.slice(held.text.length));
  const n = deltaIds.length;
  return {
    deltaIds,
    state: {
      ...state,
      tokenIds: [...state.tokenIds, ...deltaIds],
      lossMask: [...state.lossMask, ...new Array<0>(n).fill(0)],
      behaviorLogprobs: [...state.behaviorLogprobs, ...new Array<number>(n).fill(0)],
      policyVersions: [...state.policyVersions, ...new Array<number>(n).fill(-1)],
      messages: all,
      text: rendered,
      prefixChecks: [...state.prefixChecks, { turn, ok: true, ...(held.eosAs ? { eosAs: held.eosAs } : {}) }],
    },
  };
}
