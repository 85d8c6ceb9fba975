// run.json access for the stages: read it, and move its status forward under compare-and-swap.
import type { BlobStore } from '#shared/ports/blob-store';
import { type RunState, type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';
import { readJson, updateJson } from './blob-json.ts';

export async function readRunStatus(blobs: BlobStore, runId: string): Promise<RunStatus | undefined> {
  return (await readJson(blobs, keys.runJson(runId), RunStatusSchema))?.value;
}

/** Allowed forward moves; a terminal status never changes again. */
const NEXT: Record<RunState, readonly RunState[]> = {
  starting: ['running', 'failed', 'completed'],
  running: ['completed', 'failed'],
  completed: [],
  failed: [],
};

/**
 * Sets the status (and any other fields) if the move is allowed from the current status; returns the stored
 * run.json, unchanged when the move was not allowed (another writer got there first).
 */
export async function transitionRun(
  blobs: BlobStore,
  runId: string,
  to: RunState,
  now: Date,
  patch: (s: RunStatus) => Partial<RunStatus> = () => ({}),
): Promise<RunStatus | undefined> {
  return updateJson(blobs, keys.runJson(runId), RunStatusSchema, (cur) => {
    if (!cur || !NEXT[cur.status].includes(to)) return undefined;
    const at = now.toISOString();
    return {
      ...cur,
      ...patch(cur),
      status: to,
      updatedAt: at,
      ...(to === 'completed' || to === 'failed' ? { completedAt: at } : {}),
    };
  });
}
