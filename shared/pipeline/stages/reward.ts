// The reward stage: scores a finished trajectory, stores it once (put-if-absent, so a duplicate delivery
// never makes a second contribution), and when all G of its group are stored writes the group manifest
// with put-if-absent. Only the sample that wrote the manifest sends the one scored-group message; its
// redelivery re-sends it, which repairs a crash between the write and the send (the learner drops duplicates).
import { episodeOutcome } from '#shared/episode/episode';
import { episodeRowTools } from '#shared/episode/user-turns';
import { getJson, toJson } from '#shared/pipeline/blob-json';
import { sha256Hex } from '#shared/pipeline/claim-check';
import { BoundedSet, Coalescer } from '#shared/pipeline/coalesce';
import { sendTo } from '#shared/pipeline/context';
import { maybeCompleteRun, writeEvalSummaryIfComplete } from '#shared/pipeline/eval';
import { type Delivery, trajectoryId } from '#shared/pipeline/idempotency';
import type { RunResources } from '#shared/pipeline/run-resources';
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
    const { siblingPending } = await storeScored(ctx, group, key, toJson(scored));
    if (siblingPending) return;
  }
  await completeGroupIfReady(ctx, group, sampleIndex, delivery);
}

/** Puts of each group's trajectories under way in this process, by store and group folder. */
const putsUnderWay = new Map<string, number>();

/**
 * Stores a scored trajectory (put-if-absent). `siblingPending`: another trajectory of its group was being put by this
 * process when this put ended, so this record need not look whether the group is complete: that sibling's record
 * looks after its own put (or, should it fail, its retry does), which covers this one's. The G records of a group
 * in one batch then list the group once, not G times.
 */
export async function storeScored(
  ctx: StageContext,
  group: GroupRef,
  key: string,
  text: string,
): Promise<{ siblingPending: boolean }> {
  const folder = `${ctx.blobs.describe}\u0000${keys.trajectoryPrefix(group.runId, group.groupId)}`;
  putsUnderWay.set(folder, (putsUnderWay.get(folder) ?? 0) + 1);
  let put: Awaited<ReturnType<StageContext['blobs']['putIfAbsent']>>;
  try {
    put = await ctx.blobs.putIfAbsent(key, text, { contentType: 'application/json' });
  } finally {
    const left = (putsUnderWay.get(folder) ?? 1) - 1;
    if (left > 0) putsUnderWay.set(folder, left);
    else putsUnderWay.delete(folder);
  }
  if (put.written) rememberScored(ctx, key, text);
  else ctx.log.info('duplicate trajectory: the stored one counts', { key });
  return { siblingPending: putsUnderWay.has(folder) };
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
 * of which one put wins. The others now wait for the one building and take its result (other processes still
 * race, and put-if-absent still decides).
 */
const building = new Map<string, Promise<BuildResult>>();
type BuildResult = { manifest: ScoredGroup; text: string } | undefined | 'stray';

/** Manifests this process knows are written (it wrote them, or lost the put to another writer). */
const written = new BoundedSet(4096);

/** The listings of groups' trajectories: records of a group that ask while one is in flight share the next. */
const listings = new Coalescer<string[]>();

/**
 * Trajectories this process stored (the text it wrote, which is what the store holds: put-if-absent), so the record
 * that completes a group builds its manifest without reading the G trajectories back. Bounded in bytes; a group's
 * entries go once its manifest is written. A trajectory scored in another process is read from the store.
 */
const SCORED_CACHE_BYTES = 64 << 20;
const scoredTexts = new Map<string, string>();
let scoredBytes = 0;

function rememberScored(ctx: StageContext, key: string, text: string): void {
  const id = `${ctx.blobs.describe}\u0000${key}`;
  forgetScored(id);
  scoredTexts.set(id, text);
  scoredBytes += text.length;
  for (const [old, t] of scoredTexts) {
    if (scoredBytes <= SCORED_CACHE_BYTES) break;
    scoredTexts.delete(old);
    scoredBytes -= t.length;
  }
}

function forgetScored(id: string): void {
  const t = scoredTexts.get(id);
  if (t === undefined) return;
  scoredTexts.delete(id);
  scoredBytes -= t.length;
}

/** A stored trajectory: from this process's memory when it wrote it, else from the store. */
async function readScored(ctx: StageContext, key: string): Promise<Trajectory | undefined> {
  const text = scoredTexts.get(`${ctx.blobs.describe}\u0000${key}`);
  if (text === undefined) return getJson(ctx.blobs, key, TrajectoryWireSchema);
  return TrajectoryWireSchema.parse(JSON.parse(text));
}

/**
 * Writes the manifest once all G trajectories are stored, and sends the group on exactly once.
 *
 * The record's listing starts after its own put (shared with siblings that asked while one was in flight). A first
 * receive has never written this group's manifest, so once the group is complete it only builds it when no one has:
 * the manifest a sibling in this process wrote or lost is not read again, and none is read before the build (a put
 * lost to another process costs the reads of the build, once). A redelivery reads the manifest first: it may be the
 * writer whose send is unconfirmed.
 */
export async function completeGroupIfReady(
  ctx: RewardStageContext,
  group: GroupRef,
  sampleIndex: number,
  delivery: Delivery = { receiveCount: 2 },
): Promise<void> {
  const prefix = keys.trajectoryPrefix(group.runId, group.groupId);
  const stored = await listings.run(`${ctx.blobs.describe}\u0000${prefix}`, () => ctx.blobs.listKeys(prefix));
  if (stored.length < group.groupSize) return;
  const firstReceive = delivery.receiveCount <= 1;
  const manifestKey = keys.group(group.runId, group.groupId);
  const buildKey = `${ctx.blobs.describe}\u0000${manifestKey}`;
  let body: Uint8Array | undefined;
  const other = building.get(buildKey);
  if (other) {
    const result = await other.catch(() => 'failed' as const); // its failure is its record's to retry
    if (firstReceive && result !== 'failed' && result !== 'stray') return;
    body = await ctx.blobs.get(manifestKey);
  } else if (firstReceive) {
    if (written.has(buildKey)) return;
  } else body = await ctx.blobs.get(manifestKey);
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
    written.add(buildKey);
    for (let i = 0; i < group.groupSize; i++)
      forgetScored(`${ctx.blobs.describe}\u0000${keys.trajectory(group.runId, group.groupId, i)}`);
    if (wrote) {
      await emitGroup(ctx, wrote.manifest, manifestKey, sha256Hex(wrote.text));
      return;
    }
    if (firstReceive) return; // another handler wrote it: it sends
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
): Promise<BuildResult> {
  // All G at once: the last sample's record waits on these reads before its group reaches the learner.
  const read = await Promise.all(
    Array.from({ length: group.groupSize }, (_, i) =>
      readScored(ctx, keys.trajectory(group.runId, group.groupId, i)),
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
  ctx: RewardStageContext,
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
  // run.json as this process read it first: the summary needs only what the run-starter wrote (config, totals).
  const run = await ctx.resources.runStatus(group.runId);
  const summary = await writeEvalSummaryIfComplete(ctx, run, version);
  if (summary) await maybeCompleteRun(ctx, group.runId);
}
