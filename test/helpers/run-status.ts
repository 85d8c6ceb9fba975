// The smallest valid run.json for tests that only need a run to exist in a given state (redrive, status).
import type { RunStatus } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';

/** A run with no config, `groupsPlanned` train groups in one epoch, not yet given a learner. */
export function bareRunStatus(
  runId: string,
  status: RunStatus['status'] = 'running',
  groupsPlanned = 4,
): RunStatus {
  return {
    schemaVersion: 1,
    runId,
    status,
    reason: null,
    createdAt: '2025-01-01T00:00:00.000Z',
    updatedAt: '2025-01-01T00:00:00.000Z',
    config: null,
    input: { config: keys.config(runId), train: [], val: [] },
    totals: { groupsPlanned, trainPrompts: groupsPlanned, valPrompts: 0, epochs: 1 },
    learner: { submittedAt: null, jobId: null },
    completedAt: null,
  };
}
