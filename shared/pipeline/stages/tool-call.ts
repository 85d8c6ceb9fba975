// The tool-call stage: runs the calls of a trajectory's last turn with the tool core (per-tool concurrency,
// timeouts, rate limits, truncation), records the results in the episode, and sends the trajectory back to
// rollout with the tool messages to append. A failing tool is a result the model reads, never an exception.
import { onToolResults, type TimedToolResult } from '#shared/episode/episode';
import { episodeRowTools } from '#shared/episode/user-turns';
import { sendTo } from '#shared/pipeline/context';
import { alreadyScored, type Delivery, trajectoryId } from '#shared/pipeline/idempotency';
import type { RunResources } from '#shared/pipeline/run-resources';
import type { StageContext } from '#shared/ports/stage-context';
import type { RolloutContinue } from '#shared/schemas/messages/rollout-request';
import type { ToolCallRequest } from '#shared/schemas/messages/tool-call-request';

export interface ToolCallStageContext extends StageContext {
  readonly resources: RunResources;
}

export async function handleToolCallRequest(
  ctx: ToolCallStageContext,
  req: ToolCallRequest,
  delivery?: Delivery,
): Promise<void> {
  const t = req.trajectory;
  if (await alreadyScored(ctx, t, delivery)) {
    ctx.log.info('trajectory already scored; duplicate tool-call request dropped', {
      groupId: t.group.groupId,
      sampleIndex: t.sampleIndex,
    });
    return;
  }
  const base = await ctx.resources.toolRegistry(t.group.runId, t.group.stage);
  // The row's tools (and, for BFCL rows, those revealed by the user turns so far), the row's environment and the
  // calls made so far, for tools whose state is rebuilt by replay.
  // With the trajectory's id, tools that keep per-trajectory state (Python tools) serve its instance.
  const registry = base.forRow({ ...episodeRowTools(t.row, t.episode), trajectoryId: trajectoryId(t) });
  const results: TimedToolResult[] = await Promise.all(
    req.calls.map(async (call) => {
      const started = performance.now();
      const result = await registry.call(call);
      return { ...result, durationMs: performance.now() - started };
    }),
  );
  const { state: episode, toolMessages } = onToolResults(t.episode, results);
  const next: RolloutContinue = {
    schemaVersion: 1,
    kind: 'continue',
    trajectory: { ...t, episode },
    toolMessages,
  };
  await sendTo(ctx, 'rollout', t.group.runId, [next]);
}
