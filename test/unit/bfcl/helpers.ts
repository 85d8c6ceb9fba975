// Test helpers: the fixture rows (8 BFCL entries written by `toolrl bfcl dataset`, see test/fixtures/bfcl/README.md)
// and a scripted episode that drives the real episode logic, registry view and BFCL tools with assistant turns
// given as text, the way the pipeline's rollout and tool-call stages do (token counts are made up).
import { fileURLToPath } from 'node:url';
import { readDataset } from '#shared/data/dataset';
import { appendedTokens, onAssistantTurn, onToolResults, startEpisode } from '#shared/episode/episode';
import type { EpisodeState } from '#shared/episode/state';
import { episodeRowTools, userTurnsOf } from '#shared/episode/user-turns';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { ToolCall } from '#shared/schemas/tool-result';
import type { ToolRegistry } from '#shared/tools/registry';
import '#shared/bfcl/register'; // BFCL's tool kind, reward and converter join the built-ins, as the stages and CLI do

export const FIXTURE = fileURLToPath(new URL('../../fixtures/bfcl/entries.parquet', import.meta.url));

let rows: Promise<DatasetRow[]> | undefined;
export const fixtureRows = (): Promise<DatasetRow[]> => (rows ??= readDataset(FIXTURE));

export async function fixtureRow(id: string): Promise<DatasetRow> {
  const row = (await fixtureRows()).find((r) => r.extra_info.id === id);
  if (!row) throw new Error(`no fixture row ${id}`);
  return row;
}

/** An assistant turn in the hermes format writing these calls (no text around them). */
export const callsText = (calls: readonly ToolCall[]): string =>
  calls
    .map((c) => `<tool_call>\n${JSON.stringify({ name: c.name, arguments: c.arguments })}\n</tool_call>`)
    .join('\n');

/** Budgets large enough that only the script decides when the episode ends. */
export const OPEN_BUDGETS = {
  max_turns: 64,
  max_tool_calls: 256,
  max_parallel_calls: 32,
  max_total_response_length: 1_000_000,
  max_tool_response_length: 100_000,
};

/**
 * Plays `script` (one assistant text per turn) through the episode logic; calls run through the registry's view for
 * the row, all of a turn at once as the tool-call stage runs them. Stops when the episode finishes or the script ends.
 */
export async function playEpisode(
  registry: ToolRegistry,
  row: DatasetRow,
  script: readonly string[],
  config: Record<string, unknown> = OPEN_BUDGETS,
): Promise<EpisodeState> {
  let state = startEpisode(config, row.prompt, { promptTokens: 100, userTurns: userTurnsOf(row) });
  for (const text of script) {
    const turn = onAssistantTurn(state, { text, stop: 'eos', generatedTokens: 10 });
    if (turn.decision.kind === 'finish') return turn.state;
    const view = registry.forRow(episodeRowTools(row, turn.state));
    const results = await Promise.all(turn.decision.calls.map((c) => view.call(c)));
    const after = onToolResults(turn.state, results);
    state = appendedTokens(after.state, 5).state;
  }
  return state;
}

/** One assistant turn with each user turn's calls, then an answer that ends the user turn. */
export const scriptFor = (turns: readonly (readonly ToolCall[])[]): string[] =>
  turns.flatMap((calls) => (calls.length > 0 ? [callsText(calls), 'Done.'] : ['Could you tell me more?']));
