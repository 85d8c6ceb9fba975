// The progress line of `toolrl train` says when groups are being dropped and why, so a run that trains nothing
// (every group's samples scoring alike) does not just say "training from policy v0".
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { TrainProgress } from '#shared/runtime/progress';

const line = (p: TrainProgress): string => (p as unknown as { line(): string }).line();

describe('the progress line', () => {
  it('counts the groups dropped since the last step, by reason, and clears them when a step trains', () => {
    const p = new TrainProgress({ stream: new PassThrough() as unknown as NodeJS.WriteStream });
    p.onEvent({ kind: 'learner', line: { type: 'ready', policyVersion: 0, resumedFromStep: null } });
    for (const groupId of ['e0-p0', 'e0-p1', 'e0-p2'])
      p.onEvent({ kind: 'learner', line: { type: 'dropped', groupId, reason: 'no_signal' } });
    p.onEvent({ kind: 'learner', line: { type: 'dropped', groupId: 'e0-p3', reason: 'stale' } });
    p.onEvent({ kind: 'learner', line: { type: 'dropped', groupId: 'e0-p0', reason: 'duplicate' } });
    expect(line(p)).toContain(
      '(training from policy v0; 4 groups dropped before the first step (3 no signal: all rewards of a group equal, 1 stale))',
    );
    p.onEvent({ kind: 'learner', line: { type: 'step', step: 1, metrics: { reward_mean: 0.5 } } });
    expect(line(p)).toMatch(/\(training\)$/);
    p.onEvent({ kind: 'learner', line: { type: 'dropped', groupId: 'e0-p9', reason: 'no_signal' } });
    expect(line(p)).toContain('1 groups dropped since step 1 (1 no signal: all rewards of a group equal)');
    p.stop();
  });
});
