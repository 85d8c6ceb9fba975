// When a turn stops: an EOS token, the end of a tool call (`</tool_call>`), or the token budget. The stop token is
// part of the turn (it was sampled, and the model must learn to emit it).
import type { TurnStop } from '#shared/schemas/trajectory';

export const TOOL_CALL_END = '</tool_call>';

export interface StopSpec {
  eosIds: ReadonlySet<number>;
  /** The tool-call end marker's id when it is one token in the vocabulary (Qwen's `</tool_call>` is). */
  toolCallEndId?: number;
  /** The marker's text, matched on decoded pieces when it is not a single token. */
  toolCallEndText: string;
  /** Text of one token, for the text match. */
  piece(id: number): string;
}

/** Tracks one row of a batch: feed it each sampled token; it says whether (and why) the turn ends there. */
export class RowStop {
  private tail = '';
  private count = 0;

  constructor(
    private readonly spec: StopSpec,
    private readonly stopOnToolCallEnd: boolean,
    /** Tokens this turn may still sample (per-turn budget, capped by what is left of the total budget). */
    private readonly budget: number,
  ) {}

  accept(token: number): TurnStop | null {
    this.count++;
    if (this.spec.eosIds.has(token)) return 'eos';
    if (this.stopOnToolCallEnd && this.endsToolCall(token)) return 'tool_call';
    return this.count >= this.budget ? 'length' : null;
  }

  private endsToolCall(token: number): boolean {
    const { toolCallEndId, toolCallEndText } = this.spec;
    if (toolCallEndId !== undefined) return token === toolCallEndId;
    // Keep just enough decoded text to see the marker complete at this token.
    this.tail = (this.tail + this.spec.piece(token)).slice(-(toolCallEndText.length + 32));
    const at = this.tail.lastIndexOf(toolCallEndText);
    if (at < 0) return false;
    // Only a marker finished by this very token stops the turn (an earlier one would have stopped it already).
    return at + toolCallEndText.length > this.tail.length - this.spec.piece(token).length;
  }
}

/** The stop rules of a bundle: its manifest's EOS ids (plus the tokenizer's eos_token) and `</tool_call>`. */
export function stopSpecFor(
  eosTokenIds: readonly number[],
  tok: {
    eosTokenId: number | undefined;
    singleTokenId(text: string): number | undefined;
    piece(id: number): string;
  },
): StopSpec {
  const eosIds = new Set(eosTokenIds);
  if (tok.eosTokenId !== undefined) eosIds.add(tok.eosTokenId);
  const toolCallEndId = tok.singleTokenId(TOOL_CALL_END);
  return {
    eosIds,
    ...(toolCallEndId !== undefined ? { toolCallEndId } : {}),
    toolCallEndText: TOOL_CALL_END,
    piece: (id) => tok.piece(id),
  };
}
