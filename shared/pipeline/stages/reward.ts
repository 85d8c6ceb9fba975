// The reward stage: scores a finished trajectory, stores it once (put-if-absent, so a duplicate delivery
// never makes a second contribution), and when all G of its group are stored writes the group manifest
// with put-if-absent. Only the sample that wrote the manifest sends the one scored-group message; its
// redelivery re-sends it, which repairs a crash between the write and the send (the learner drops duplicates).
import { episodeOutcome } from '#shared/episode/episode';
import { episodeRowTools } from '#shared/episode/user-turns';
import { getJson, putJsonIfAbsent, toJson } from '#shared/pipeline/blob-json';
import { sha256Hex } from '#shared/pipeline/claim-check';
import { sendTo } from '#shared/pipeline/context';
import { maybeCompleteRun, writeEvalSummaryIfComplete } from '#shared/pipeline/eval';
import { type Delivery, trajectoryId } from '#shared/pipeline/idempotency';
import type { RunResources } from '#shared/pipeline/run-resources';
import { readRunStatus } from '#shared/pipeline/run-status';
import { trajectoryTokens } from '#shared/policy/token-state';
import { PermanentError } from '#shared/ports/errors';
import type { StageContext } from '#shared/ports/stage-context';
import { rewardInputFromTrajectory } from '#shared/rewards/input';
import type { RewardError } from '#shared/rewards/types';
import { type GroupRef, valGroupVersion } from '#shared/schemas/messages/group-ref';
import type { RewardRequest } from '#shared/schemas/messages/reward-request';
import { TrajectoryWireSchema } from '#shared/schemas/messages/token-arrays';
import type { TrajectoryInFlight } from '#shared/schemas/messages/trajectory-in-flight';
import { type ScoredGroup, type ScoredGroupMessage, ScoredGroupSchema } from '#shared/schemas/scored-group';
import type { Trajectory, TurnRecord } from '#shared/schemas/trajectory';
import { keys } from '#shared/topology';

export interface RewardStageContext extends StageContext {
  readonly resources: RunResources;
}

export async function handleRewardRequest(
  ctx: RewardStageContext,
  req: RewardRequest,
  delivery: Delivery = { receiveCount: 2 },
): Promise<void> {
  const t = req.trajectory;
  const { group, sampleIndex } = t;
  if (sampleIndex >= group.groupSize)
    throw new PermanentError(
      `sample ${sampleIndex} is outside group ${group.groupId} of size ${group.groupSize}`,
    );
  const key = keys.trajectory(group.runId, group.groupId, sampleIndex);
  // A first receive scores straight away (rewards are deterministic, and the put-if-absent keeps the first
  // stored); a redelivery first looks for the trajectory it may already have stored.
  if (delivery.receiveCount <= 1 || !(await ctx.blobs.head(key))) {
    const scored = await scoreTrajectory(ctx, t);
    const put = await putJsonIfAbsent(ctx.blobs, key, scored);
    if (!put.written) ctx.log.info('duplicate trajectory: the stored one counts', { key });
  }
  await completeGroupIfReady(ctx, group, sampleIndex);
}

/**
 * Ends the stateful tools' instances of a finished trajectory (verl's calc_reward, then release): their final
 * rewards by tool name, and any that failed. Only runs whose tools keep per-trajectory state do any work.
 */
async function finishTools(
  ctx: RewardStageContext,
  t: TrajectoryInFlight,
  turns: TurnRecord[],
): Promise<{ rewards: Record<string, number>; errors: RewardError[] }> {
  if (!(await ctx.resources.hasStatefulTools(t.group.runId, t.group.stage)))
    return { rewards: {}, errors: [] };
  const registry = await ctx.resources.toolRegistry(t.group.runId, t.group.stage);
  const end = await registry.finishTrajectory({
    ...episodeRowTools(t.row, t.episode),
    history: turns.flatMap((turn) => turn.toolCalls),
    trajectoryId: trajectoryId(t),
  });
  return {
    rewards: end.rewards,
    errors: end.errors.map((e) => ({ reward: `tool/${e.tool}`, message: e.message })),
  };
}

/** The stored, scored trajectory: token fields from the engine, turns from the episode, reward and parts. */
export async function scoreTrajectory(ctx: RewardStageContext, t: TrajectoryInFlight): Promise<Trajectory> {
  const outcome = episodeOutcome(t.episode);
  const reward = await ctx.resources.reward(t.group.runId, t.group.stage);
  const row = t.row as { reward_model?: { ground_truth?: unknown }; extra_info?: Record<string, unknown> };
  const tools = await finishTools(ctx, t, outcome.turns);
  const { score, components, errors } = await reward(
    rewardInputFromTrajectory(
      { turns: outcome.turns, finishReason: outcome.finishReason, messages: outcome.messages },
      {
        groundTruth: row.reward_model?.ground_truth ?? null,
        dataSource: t.group.dataSource,
        // An agent episode's outcome (what the agent returned, or why it failed) is the rewards' to read too.
        extraInfo: t.episode.agent ? { ...row.extra_info, agent: t.episode.agent } : (row.extra_info ?? {}),
        // No schemas in the prompt (an inline format such as code blocks): the rewards do not judge tool names.
        tools: t.tokens.tools.length ? t.tokens.tools : null,
        toolRewards: tools.rewards,
      },
    ),
  );
  const rewardErrors = [...tools.errors, ...(errors ?? [])];
  const tok = trajectoryTokens(t.tokens);
  return TrajectoryWireSchema.parse({
    sampleIndex: t.sampleIndex,
    tokenIds: tok.tokenIds,
    promptLength: tok.promptLength,
    lossMask: tok.lossMask,
    behaviorLogprobs: tok.behaviorLogprobs,
    policyVersions: tok.policyVersions,
    finishReason: outcome.finishReason,
    turns: outcome.turns,
    messages: outcome.messages,
    reward: score,
    rewardComponents: components,
    ...(rewardErrors.length ? { rewardErrors } : {}),
    ...(t.segments?.length ? { segments: t.segments } : {}),
  });
}

/**
 * Manifests being built in this process, by store and key. The G reward records of a group often arrive in one
 * batch and run at once; each that found the listing complete read all G trajectories to build the same manifest,
 * of which one put wins. The others now wait for the one building and read what it wrote (other processes still
 * race, and put-if-absent still decides).
 */
const building = new Map<string, Promise<unknown>>();

/** Writes the manifest once all G trajectories are stored, and sends the group on exactly once. */
export async function completeGroupIfReady(
  ctx: StageContext,
  group: GroupRef,
  sampleIndex: number,
): Promise<void> {
  const stored = await ctx.blobs.listKeys(keys.trajectoryPrefix(group.runId, group.groupId));
  if (stored.length < group.groupSize) return;
  const manifestKey = keys.group(group.runId, group.groupId);
  const buildKey = `${ctx.blobs.describe}\u0000${manifestKey}`;
  let body = await ctx.blobs.get(manifestKey);
  const other = body ? undefined : building.get(buildKey);
  if (other) {
    await other.catch(() => {}); // its failure is its record's to retry; this one builds below if need be
    body = await ctx.blobs.get(manifestKey);
  }
  if (!body) {
    const attempt = writeManifest(ctx, group, manifestKey, sampleIndex);
    building.set(buildKey, attempt);
    let wrote: Awaited<typeof attempt>;
    try {
      wrote = await attempt;
    } finally {
      if (building.get(buildKey) === attempt) building.delete(buildKey);
    }
    if (wrote === 'stray') return; // a stray key filled the listing; wait for the real sample
    if (wrote) {
      await emitGroup(ctx, wrote.manifest, manifestKey, sha256Hex(wrote.text));
      return;
    }
    body = await ctx.blobs.get(manifestKey);
    if (!body) throw new Error(`${manifestKey} was written by another handler but cannot be read`);
  }
  // Only the header is needed here; the manifest was validated when it was written.
  const existing = ManifestHeaderSchema.parse(JSON.parse(Buffer.from(body).toString('utf8')));
  // Only the writer re-sends, and only while its send is unconfirmed: a racing sibling or a plain duplicate
  // stays silent, so one group yields one message. (A crash after the send but before the confirmation
  // re-sends once more; the learner drops that duplicate.)
  if (existing.completedBy !== sampleIndex) return;
  if (await ctx.blobs.head(keys.groupSent(group.runId, group.groupId))) return;
  await emitGroup(ctx, existing, manifestKey, sha256Hex(body));
}

/** Reads the G stored trajectories and puts the manifest if absent: what it wrote, undefined if another
 * handler's put came first, or 'stray' when a listed key is not one of the group's samples. */
async function writeManifest(
  ctx: StageContext,
  group: GroupRef,
  manifestKey: string,
  sampleIndex: number,
): Promise<{ manifest: ScoredGroup; text: string } | undefined | 'stray'> {
  // All G at once: the last sample's record waits on these reads before its group reaches the learner.
  const read = await Promise.all(
    Array.from({ length: group.groupSize }, (_, i) =>
      getJson(ctx.blobs, keys.trajectory(group.runId, group.groupId, i), TrajectoryWireSchema),
    ),
  );
  if (read.some((t) => !t)) return 'stray';
  const trajectories = read as Trajectory[];
  const manifest: ScoredGroup = {
    schemaVersion: 1,
    runId: group.runId,
    groupId: group.groupId,
    promptId: group.promptId,
    epoch: group.epoch,
    stage: group.stage,
    split: group.split,
    dataSource: group.dataSource,
    position: group.position ?? null,
    trajectories,
    completedBy: sampleIndex,
  };
  const text = toJson(manifest);
  const put = await ctx.blobs.putIfAbsent(manifestKey, text, { contentType: 'application/json' });
  return put.written ? { manifest, text } : undefined;
}

const ManifestHeaderSchema = ScoredGroupSchema.pick({
  runId: true,
  groupId: true,
  split: true,
  position: true,
  completedBy: true,
});

async function emitGroup(
  ctx: StageContext,
  group: Pick<ScoredGroup, 'runId' | 'groupId' | 'split' | 'position'>,
  manifestKey: string,
  sha256: string,
): Promise<void> {
  if (group.split === 'train') {
    const message: ScoredGroupMessage = {
      schemaVersion: 1,
      runId: group.runId,
      groupId: group.groupId,
      manifestKey,
      sha256,
      ...(group.position != null ? { position: group.position } : {}),
    };
    await sendTo(ctx, 'scored-groups', group.runId, [message]);
    await ctx.blobs.putIfAbsent(keys.groupSent(group.runId, group.groupId), manifestKey);
    ctx.log.info('group complete', { runId: group.runId, groupId: group.groupId });
    return;
  }
  // A validation group: summarise its version once all of the version's groups are in.
  const version = valGroupVersion(group.groupId);
  if (version === undefined)
    throw new PermanentError(`validation group id ${group.groupId} names no version`);
  const run = await readRunStatus(ctx.blobs, group.runId);
  if (!run) return;
  const summary = await writeEvalSummaryIfComplete(ctx, run, version);
  if (summary) await maybeCompleteRun(ctx, group.runId);
}
