// The tool-call stage: runs the calls of a trajectory's last turn with the tool core (per-tool concurrency,
// timeouts, rate limits, truncation), records the results in the episode, and sends the trajectory back to
// rollout with the tool messages to append. A failing tool is a result the model reads, never an exception.
import { onToolResults, type TimedToolResult } from '../../episode/episode.ts';
import { episodeRowTools } from '../../episode/user-turns.ts';
import type { StageContext } from '../../ports/stage-context.ts';
import type { RolloutContinue } from '../../schemas/messages/rollout-request.ts';
import type { ToolCallRequest } from '../../schemas/messages/tool-call-request.ts';
import { sendTo } from '../context.ts';
import { alreadyScored, type Delivery, trajectoryId } from '../idempotency.ts';
import type { RunResources } from '../run-resources.ts';

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
