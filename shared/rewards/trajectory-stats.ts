// Counts over a reward input that several rewards share, so "a call", "an attempt" and "the final answer"
// mean the same thing in every reward.
import type { RewardInput, ScoredCall } from './input.ts';

export const allCalls = (input: RewardInput): ScoredCall[] => input.turns.flatMap((t) => t.calls);

export const parseErrorCount = (input: RewardInput): number =>
  input.turns.reduce((n, t) => n + t.parseErrors.length, 0);

/** Every tool call the model tried to write: well-formed ones plus malformed ones. */
export const attemptCount = (input: RewardInput): number => allCalls(input).length + parseErrorCount(input);

/** A call that ran and succeeded. A call with an unknown result (hand-written input) is not counted. */
export const succeeded = (c: ScoredCall): boolean => c.result?.ok === true;

/** A call that did not succeed: it failed, or it was not run (over a limit). Unknown results are not failures. */
export const failed = (c: ScoredCall): boolean => c.result !== null && !c.result.ok;

/**
 * The last turn's content (text outside tool calls) after any `<think>…</think>` reasoning (Qwen3, R1):
 * where answers are read, so a \boxed{} drafted while thinking is not taken for the answer. '' when empty.
 */
export function finalContent(input: RewardInput): string {
  const content = input.turns.at(-1)?.content ?? '';
  const end = content.lastIndexOf('</think>');
  return end < 0 ? content : content.slice(end + '</think>'.length).trim();
}

/**
 * The episode ended with an answer: it stopped of its own accord (eos) on a turn that made no call attempt.
 * By the episode logic an eos finish implies the latter; hand-written inputs are checked too.
 */
export function endedWithAnswer(input: RewardInput): boolean {
  const last = input.turns.at(-1);
  return (
    input.finishReason === 'eos' &&
    last !== undefined &&
    last.calls.length === 0 &&
    last.parseErrors.length === 0 &&
    finalContent(input) !== ''
  );
}
