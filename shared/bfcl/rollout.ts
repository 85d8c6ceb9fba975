// One episode of one row in this process: the steps the pipeline's rollout and tool-call stages take, in a loop
// (render the prompt with the row's tools, sample a turn, run its calls or feed the next user turn, append,
// repeat), for `toolrl bfcl eval`. Same episode logic, registry view and engine as training.
import {
  appendedTokens,
  failEpisode,
  onAssistantTurn,
  onToolResults,
  startEpisode,
  type TimedToolResult,
} from '#shared/episode/episode';
import type { EpisodeState } from '#shared/episode/state';
import { episodeRowTools, userTurnsOf } from '#shared/episode/user-turns';
import type { Policy, TurnSample } from '#shared/policy/policy';
import type { SamplingParams } from '#shared/policy/sampler';
import type { TokenState } from '#shared/policy/token-state';
import { PrefixBreakError } from '#shared/policy/turns';
import type { MultiTurnConfig } from '#shared/schemas/config/rollout';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { ToolRegistry } from '#shared/tools/registry';

export interface EpisodeRun {
  episode: EpisodeState;
  tokens: TokenState;
}

export async function runEpisode(args: {
  policy: Policy;
  registry: ToolRegistry;
  row: DatasetRow;
  multiTurn: Partial<MultiTurnConfig>;
  sampling: SamplingParams;
}): Promise<EpisodeRun> {
  const { policy, registry, row } = args;
  const sampling = { ...args.sampling, maxTotalResponseTokens: undefined as number | undefined };
  const tools = registry.forRow(episodeRowTools(row)).schemas();
  let episode = startEpisode(args.multiTurn, row.prompt, { userTurns: userTurnsOf(row) });
  sampling.maxTotalResponseTokens = episode.config.max_total_response_length;
  const started = await policy.startGroup(row.prompt, tools, 1, sampling);
  episode = { ...episode, promptTokens: started.promptIds.length };
  let tokens = started.states[0]!;
  let sample: TurnSample = started.samples[0]!;
  for (;;) {
    const turn = onAssistantTurn(
      episode,
      {
        text: sample.text,
        stop: sample.stop,
        generatedTokens: sample.tokenIds.length,
        policyVersion: policy.version,
      },
      { tools: tokens.tools },
    );
    if (turn.decision.kind === 'finish') return { episode: turn.state, tokens };
    const view = registry.forRow(episodeRowTools(row, turn.state));
    // All at once, as the tool-call stage runs them; the BFCL session still runs them in the model's order.
    const results: TimedToolResult[] = await Promise.all(
      turn.decision.calls.map(async (call) => {
        const t0 = performance.now();
        return { ...(await view.call(call)), durationMs: performance.now() - t0 };
      }),
    );
    const after = onToolResults(turn.state, results);
    let next: Awaited<ReturnType<Policy['continueTrajectory']>>;
    try {
      next = await policy.continueTrajectory(tokens, after.toolMessages, sampling);
    } catch (err) {
      if (!(err instanceof PrefixBreakError)) throw err;
      return { episode: failEpisode(after.state, err.message), tokens: err.state };
    }
    const appended = next.state.tokenIds.length - tokens.tokenIds.length - next.sample.tokenIds.length;
    const appendedState = appendedTokens(after.state, appended);
    tokens = next.state;
    if ((appendedState.next.kind === 'finish') !== next.budgetExhausted)
      throw new Error('engine and episode disagree on the response budget');
    if (next.budgetExhausted) return { episode: appendedState.state, tokens };
    episode = appendedState.state;
    sample = next.sample;
  }
}
