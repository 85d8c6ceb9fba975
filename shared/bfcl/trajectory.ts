// Which of a trajectory's calls reached the BFCL environment, and how they split into BFCL's user turns. One
// rule for both the environment (what to replay) and the reward (what the checker scores):
//   a call reached the environment  iff  its result is ok or an `execution_error` (BFCL's executor ran it and
//   raised); calls refused before running (invalid arguments, unknown or withheld function, over a limit,
//   timed out) did not, and the model was told so.
//   an assistant turn with no call attempt ends its user turn (the episode then feeds the next user message).
import type { ToolResult } from '#shared/schemas/tool-result';
import { decodeArguments } from '#shared/tools/validate';
import type { BfclCall } from './protocol.ts';

/** A call as rewards and turn records hold it; `result` null means unknown (hand-written input): counted as run. */
export interface RecordedCall {
  name: string;
  arguments: unknown;
  result: ToolResult | null;
}

export const reachedEnvironment = (c: RecordedCall): boolean =>
  c.result === null || c.result.ok || c.result.error?.type === 'execution_error';

/** The calls of `history` that changed (or read) the environment, in order, restricted to BFCL functions. */
export function executedCalls(history: readonly RecordedCall[], functions: ReadonlySet<string>): BfclCall[] {
  const out: BfclCall[] = [];
  for (const c of history) {
    if (!functions.has(c.name) || !reachedEnvironment(c)) continue;
    // As the registry ran it: a model may write the arguments as a JSON string of the object.
    let args: Record<string, unknown>;
    try {
      args = decodeArguments(c.arguments);
    } catch {
      continue; // arguments that do not decode never reached the environment
    }
    out.push({ name: c.name, arguments: args });
  }
  return out;
}

export interface AssistantTurnCalls {
  calls: readonly RecordedCall[];
  /** Malformed calls: they count as attempts (the turn did not end the user turn). */
  parseErrors: readonly unknown[];
}

/**
 * BFCL's model result: per user turn, per assistant turn (BFCL's "step") that executed something, its calls.
 * The length is the number of user turns the episode reached.
 */
export function callsByUserTurn(
  turns: readonly AssistantTurnCalls[],
  functions: ReadonlySet<string>,
): BfclCall[][][] {
  const out: BfclCall[][][] = [[]];
  turns.forEach((turn, i) => {
    const step = executedCalls(turn.calls, functions);
    if (step.length > 0) out.at(-1)!.push(step);
    const endsUserTurn = turn.calls.length + turn.parseErrors.length === 0;
    if (endsUserTurn && i < turns.length - 1) out.push([]);
  });
  return out;
}
