// The rollout stage for runs with `rollout.agent`: the G episodes of a group run at once within this invocation,
// each its own agent call with its own OpenAI-compatible endpoint on loopback (shared/agent), backed by the rollout
// engine at the run's current policy. Nothing goes to the tool-call stage (the agent runs its own tools): every
// episode, however it ended, goes to the reward stage as a trajectory like any other.
//
// An episode is bounded by `rollout.agent.timeout` and, on Lambda, by the invocation's own time: it ends with
// `timeout` a margin before the function would be stopped, so its trajectory is still scored and sent.
import { randomBytes } from 'node:crypto';
import { type AgentEnd, type AgentEngine, AgentEpisode } from '#shared/agent/episode';
import { AgentFailure, type AgentKwargs, AgentLoadError, type AgentRunner } from '#shared/agent/runner';
import { serveEpisode } from '#shared/agent/server';
import type { PolicyProvider } from '#shared/pipeline/policies';
import { samplingParams } from '#shared/policy/sampler';
import { startState } from '#shared/policy/turns';
import { PermanentError } from '#shared/ports/errors';
import type { Log } from '#shared/ports/log';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import type { RunConfig } from '#shared/schemas/config/run';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { RewardRequest } from '#shared/schemas/messages/reward-request';
import type { RolloutStart } from '#shared/schemas/messages/rollout-request';
import { Semaphore } from '#shared/tools/limits';
import type { RolloutStageContext } from './rollout.ts';

/** Time kept back from a Lambda invocation's end for scoring and sending the group's trajectories. */
export const LAMBDA_MARGIN_MS = 60_000;

export interface AgentGroupInput {
  readonly req: RolloutStart;
  readonly row: DatasetRow;
  readonly config: RunConfig;
  /** The run's tool schemas for this row (the `tools` argument). */
  readonly tools: ToolSchema[];
  /** Milliseconds left in this invocation (Lambda), when there is such a limit. */
  readonly remainingMs?: () => number;
}

/** Each loaded agent's episode slots in this process (`rollout.agent.max_concurrency`). */
const slots = new WeakMap<AgentRunner, Semaphore>();

export async function runAgentGroup(
  ctx: RolloutStageContext,
  input: AgentGroupInput,
): Promise<RewardRequest[]> {
  const g = input.req.group;
  let runner: AgentRunner | undefined;
  try {
    runner = await ctx.resources.agent(g.runId, g.stage);
  } catch (err) {
    if (err instanceof AgentLoadError) throw new PermanentError(`group ${g.groupId}: ${err.message}`);
    throw err;
  }
  if (!runner) throw new Error(`run ${g.runId} has no rollout.agent`);
  const agent = runner;
  const spec = input.config.rollout.agent!;
  const invocationEnd = input.remainingMs
    ? Date.now() + input.remainingMs() - LAMBDA_MARGIN_MS
    : Number.POSITIVE_INFINITY;
  if (invocationEnd <= Date.now())
    throw new Error(
      `group ${g.groupId}: the invocation has no time left for an agent episode; it will be retried`,
    );
  let pool = slots.get(agent);
  if (!pool) {
    pool = new Semaphore(spec.max_concurrency);
    slots.set(agent, pool);
  }
  const episodes = Array.from({ length: g.groupSize }, (_, i) =>
    // An episode's clock starts when it has a slot: the wait for one is not the agent's time.
    pool.run(() =>
      runEpisode(ctx, input, agent, i, Math.min(Date.now() + spec.timeout * 1000, invocationEnd)),
    ),
  );
  return Promise.all(episodes);
}

async function runEpisode(
  ctx: RolloutStageContext,
  input: AgentGroupInput,
  runner: AgentRunner,
  sampleIndex: number,
  deadline: number,
): Promise<RewardRequest> {
  const { req, row, config } = input;
  const g = req.group;
  const id = randomBytes(6).toString('hex');
  const sampling = samplingParams(config.rollout, req.seed, g.split);
  const episode = new AgentEpisode({
    id,
    model: config.model.path,
    sampleIndex,
    sampling,
    multiTurn: config.rollout.multi_turn,
    maxPromptLength: config.data.max_prompt_length,
    deadline,
  });
  const engine = policyEngine(ctx.policies, g.runId, g.policyVersion);
  const endpoint = await serveEpisode(episode, engine, {
    onServerError: (err) =>
      ctx.log.warn('agent endpoint request failed', { groupId: g.groupId, sampleIndex, error: String(err) }),
  });
  const kwargs: AgentKwargs = {
    ...config.rollout.agent!.kwargs,
    base_url: endpoint.baseUrl,
    model: config.model.path,
    messages: row.prompt,
    tools: input.tools,
    extra_info: row.extra_info ?? {},
    sample_index: sampleIndex,
    episode_id: `${g.groupId}/${sampleIndex}/${id}`,
  };
  let how: AgentEnd;
  try {
    const seconds = Math.max(0.001, (deadline - Date.now()) / 1000);
    const value = await runner.run(kwargs, seconds);
    how = { kind: 'returned', ...value };
  } catch (err) {
    const kind = err instanceof AgentFailure ? err.kind : 'error';
    how = { kind, message: (err as Error).message };
  } finally {
    await endpoint.close();
  }
  const done = await episode.finish(how, () =>
    promptOnly(engine, row.prompt, input.tools, sampleIndex, req.seed),
  );
  logEpisode(ctx.log, g.groupId, sampleIndex, done.episode);
  return {
    schemaVersion: 1,
    trajectory: {
      schemaVersion: 1,
      group: g,
      sampleIndex,
      row: req.row,
      tokens: done.tokens,
      episode: done.episode,
      ...(done.segments.length ? { segments: done.segments } : {}),
    },
  };
}

/**
 * The engine behind an episode's endpoint: each request is sampled by the run's newest policy (or the group's
 * pinned one), never by an older one than the episode's last turn, as the rollout stage continues trajectories.
 */
function policyEngine(policies: PolicyProvider, runId: string, pinned: number | null): AgentEngine {
  let last: number | null = null;
  return {
    async prompt(messages, tools) {
      const lease = await policies.acquire(runId, pinned, { fresh: last === null });
      try {
        const text = lease.policy.tokenizer.render(messages, tools, { addGenerationPrompt: true });
        return { text, ids: lease.policy.tokenizer.encode(text) };
      } finally {
        lease.release();
      }
    },
    async sample(state, messages, s) {
      const lease = await policies.acquire(
        runId,
        pinned,
        last === null ? { fresh: true } : { atLeast: last },
      );
      try {
        const c = await lease.policy.continueTrajectory(state, messages, s);
        last = lease.version;
        return { ...c, version: lease.version };
      } finally {
        lease.release();
      }
    },
  };
}

/** The row's prompt with nothing sampled: the trajectory of an agent that never sent a request. */
async function promptOnly(
  engine: AgentEngine,
  messages: ChatMessage[],
  tools: ToolSchema[],
  sampleIndex: number,
  seed: number,
) {
  const { text, ids } = await engine.prompt(messages, tools);
  return startState({ sampleIndex, seed, messages, tools, promptText: text, promptIds: ids });
}

function logEpisode(log: Log, groupId: string, sampleIndex: number, e: AgentEpisodeSummary): void {
  const fields = {
    groupId,
    sampleIndex,
    finishReason: e.finishReason,
    turns: e.turns.length,
    requests: e.agent?.requests,
    segments: e.agent?.segments,
  };
  if (e.finishReason === 'error' || e.finishReason === 'timeout')
    log.warn('agent episode failed', { ...fields, error: e.error });
  else if ((e.agent?.segments ?? 1) > 1)
    log.info('agent episode split: the agent rewrote its history', fields);
}

type AgentEpisodeSummary = Awaited<ReturnType<AgentEpisode['finish']>>['episode'];
