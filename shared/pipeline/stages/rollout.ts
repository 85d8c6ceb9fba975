// The rollout stage: generates turns with the policy engine — the first turn of all G samples of a group
// with one shared prefill, or the next turn of one trajectory after its tool results — and routes each
// trajectory on: to tool-call when its turn asked for tools, to reward when the episode is over.

import { appendedTokens, failEpisode, onAssistantTurn, startEpisode } from '#shared/episode/episode';
import type { EpisodeState } from '#shared/episode/state';
import { episodeRowTools, userTurnsOf } from '#shared/episode/user-turns';
import { getParser } from '#shared/parsing/registry';
import { sendTo } from '#shared/pipeline/context';
import { alreadyScored, type Delivery } from '#shared/pipeline/idempotency';
import type { PolicyLease, PolicyProvider } from '#shared/pipeline/policies';
import type { RunResources } from '#shared/pipeline/run-resources';
import type { TurnSample } from '#shared/policy/policy';
import { samplingParams } from '#shared/policy/sampler';
import type { TokenState } from '#shared/policy/token-state';
import { PrefixBreakError, startState } from '#shared/policy/turns';
import { PermanentError } from '#shared/ports/errors';
import type { StageContext } from '#shared/ports/stage-context';
import { DatasetRowSchema } from '#shared/schemas/dataset-row';
import type { RewardRequest } from '#shared/schemas/messages/reward-request';
import type { RolloutContinue, RolloutRequest, RolloutStart } from '#shared/schemas/messages/rollout-request';
import type { ToolCallRequest } from '#shared/schemas/messages/tool-call-request';
import type { TrajectoryInFlight } from '#shared/schemas/messages/trajectory-in-flight';
import { keys } from '#shared/topology';
import { runAgentGroup } from './agent-rollout.ts';

export interface RolloutStageContext extends StageContext {
  readonly resources: RunResources;
  readonly policies: PolicyProvider;
}

/** What a rollout produced, by destination (sent in two batches). */
interface Routed {
  toolCalls: ToolCallRequest[];
  rewards: RewardRequest[];
}

export async function handleRolloutRequest(
  ctx: RolloutStageContext,
  req: RolloutRequest,
  delivery?: Delivery & { readonly remainingMs?: () => number },
): Promise<void> {
  const routed: Routed = { toolCalls: [], rewards: [] };
  const runId = req.kind === 'start' ? req.group.runId : req.trajectory.group.runId;
  if (req.kind === 'start') await startGroup(ctx, req, routed, delivery);
  else await continueTrajectory(ctx, req, routed, delivery);
  // Both at once: on SQS each is a request whose latency the next stage waits on.
  await Promise.all([
    sendTo(ctx, 'tool-calls', runId, routed.toolCalls),
    sendTo(ctx, 'reward', runId, routed.rewards),
  ]);
}

async function startGroup(
  ctx: RolloutStageContext,
  req: RolloutStart,
  out: Routed,
  delivery?: Delivery & { readonly remainingMs?: () => number },
): Promise<void> {
  const g = req.group;
  const remainingMs = delivery?.remainingMs;
  // Only a redelivery looks for the group's manifest first (as alreadyScored): a start sent twice that gets through
  // samples the group again, and the reward stage's put-if-absent keeps the first; the look would cost every group
  // a request.
  if ((delivery?.receiveCount ?? 2) > 1 && (await ctx.blobs.head(keys.group(g.runId, g.groupId)))) {
    ctx.log.info('group already complete; duplicate start dropped', { groupId: g.groupId });
    return;
  }
  const config = await ctx.resources.config(g.runId, g.stage);
  const parsedRow = DatasetRowSchema.safeParse(req.row);
  if (!parsedRow.success)
    throw new PermanentError(`group ${g.groupId}: bad dataset row: ${parsedRow.error.message}`);
  const row = parsedRow.data;
  let userTurns: ReturnType<typeof userTurnsOf>;
  let rowTools: ReturnType<typeof episodeRowTools>;
  try {
    userTurns = userTurnsOf(row); // BFCL multi-turn rows: the user turns after the prompt
    rowTools = episodeRowTools(row);
  } catch (err) {
    throw new PermanentError(`group ${g.groupId}: bad dataset row: ${(err as Error).message}`);
  }
  const registry = await ctx.resources.toolRegistry(g.runId, g.stage);
  if (config.rollout.agent) {
    // The user's agent drives each episode through its own endpoint (agent-rollout.ts); each goes to reward.
    const tools = registry.forRow(rowTools).schemas();
    out.rewards.push(
      ...(await runAgentGroup(ctx, { req, row, config, tools, ...(remainingMs ? { remainingMs } : {}) })),
    );
    return;
  }
  // What the chat template renders: the row's tools, unless the call format lists them in the prompt's own text
  // (ReAct) or its calls are inline (code blocks reach their tool from the reply's text, as the prompt describes
  // it; a template's tool schemas would teach a call format the run does not parse). They are callable either way.
  const parser = getParser(config.rollout.multi_turn.tool_parser_format);
  const tools =
    parser.toolsInTemplate === false || parser.inline === true ? [] : registry.forRow(rowTools).schemas();
  const lease = await ctx.policies.acquire(g.runId, g.policyVersion, { fresh: true });
  try {
    const promptText = lease.policy.tokenizer.render(row.prompt, tools, { addGenerationPrompt: true });
    const promptIds = lease.policy.tokenizer.encode(promptText);
    if (promptIds.length > config.data.max_prompt_length) {
      // Nothing is sampled, but the group still completes (every sample ends with `error`, the same reward),
      // so the learner counts it and the run's plan is not left waiting for it.
      const reason = `prompt is ${promptIds.length} tokens, over data.max_prompt_length=${config.data.max_prompt_length}`;
      ctx.log.warn('prompt too long; group ends without sampling', { groupId: g.groupId, reason });
      for (let i = 0; i < g.groupSize; i++) {
        const episode = startEpisode(config.rollout.multi_turn, row.prompt, {
          promptTokens: promptIds.length,
          userTurns,
        });
        const tokens = startState({
          sampleIndex: i,
          seed: req.seed,
          messages: row.prompt,
          tools,
          promptText,
          promptIds,
        });
        out.rewards.push(
          reward({
            schemaVersion: 1,
            group: g,
            sampleIndex: i,
            row: req.row,
            tokens,
            episode: failEpisode(episode, reason),
          }),
        );
      }
      return;
    }
    const started = await lease.policy.startGroup(
      row.prompt,
      tools,
      g.groupSize,
      samplingParams(config.rollout, req.seed, g.split),
    );
    for (let i = 0; i < g.groupSize; i++) {
      const episode = startEpisode(config.rollout.multi_turn, row.prompt, {
        promptTokens: started.promptIds.length,
        userTurns,
      });
      const base: TrajectoryInFlight = {
        schemaVersion: 1,
        group: g,
        sampleIndex: i,
        row: req.row,
        tokens: started.states[i]!,
        episode,
      };
      route(base, started.states[i]!, episode, started.samples[i]!, lease, out);
    }
  } finally {
    lease.release();
  }
}

async function continueTrajectory(
  ctx: RolloutStageContext,
  req: RolloutContinue,
  out: Routed,
  delivery?: Delivery,
): Promise<void> {
  const t = req.trajectory;
  if (await alreadyScored(ctx, t, delivery)) {
    ctx.log.info('trajectory already scored; duplicate continuation dropped', {
      groupId: t.group.groupId,
      sampleIndex: t.sampleIndex,
    });
    return;
  }
  const config = await ctx.resources.config(t.group.runId, t.group.stage);
  const lastVersion = t.episode.turns.at(-1)?.policyVersion ?? 0;
  const lease = await ctx.policies.acquire(t.group.runId, t.group.policyVersion, { atLeast: lastVersion });
  try {
    let c: Awaited<ReturnType<typeof lease.policy.continueTrajectory>>;
    try {
      c = await lease.policy.continueTrajectory(
        t.tokens,
        req.toolMessages,
        samplingParams(config.rollout, t.tokens.seed, t.group.split),
        // A deterministic run samples the same after a kill (or an eviction) as on the kept cache.
        { exact: config.trainer.deterministic },
      );
    } catch (err) {
      if (!(err instanceof PrefixBreakError)) throw err;
      // The chat template rewrote history: the tokens held so far are still exactly what was sampled, so the
      // trajectory is scored as it stands, ended with `error` (the reward and the learner see why).
      lease.policy.endTrajectory(t.tokens);
      out.rewards.push(reward({ ...t, tokens: err.state, episode: failEpisode(t.episode, err.message) }));
      return;
    }
    const appended = c.state.tokenIds.length - t.tokens.tokenIds.length - c.sample.tokenIds.length;
    const after = appendedTokens(t.episode, appended);
    if (after.next.kind === 'finish' || c.budgetExhausted) {
      if (after.next.kind !== 'finish' || !c.budgetExhausted)
        throw new Error(
          `engine and episode disagree on the response budget (engine exhausted: ${c.budgetExhausted}, episode: ${after.next.kind})`,
        );
      lease.policy.endTrajectory(c.state);
      out.rewards.push(reward({ ...t, tokens: c.state, episode: after.state }));
      return;
    }
    route(t, c.state, after.state, c.sample, lease, out);
  } finally {
    lease.release();
  }
}

/**
 * Records a sampled turn in the episode and sends the trajectory where the episode says; one that ends frees the KV
 * cache its turn kept (only a continuation would have used it).
 */
function route(
  base: TrajectoryInFlight,
  tokens: TokenState,
  episode: EpisodeState,
  sample: TurnSample,
  lease: PolicyLease,
  out: Routed,
): void {
  const version = lease.version;
  const { state, decision } = onAssistantTurn(
    episode,
    {
      text: sample.text,
      stop: sample.stop,
      generatedTokens: sample.tokenIds.length,
      policyVersion: version,
    },
    { tools: tokens.tools },
  );
  const next: TrajectoryInFlight = { ...base, tokens, episode: state };
  if (decision.kind === 'finish') {
    lease.policy.endTrajectory(tokens);
    out.rewards.push(reward(next));
  } else out.toolCalls.push({ schemaVersion: 1, trajectory: next, calls: decision.calls });
}

const reward = (trajectory: TrajectoryInFlight): RewardRequest => ({ schemaVersion: 1, trajectory });
