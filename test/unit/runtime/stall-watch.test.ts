// The stall watch: a run whose learner waits while no queue holds anything that could bring it groups fails after
// the limit, naming what the learner waits for; queued work, a message in flight, a group written to the learner
// after it said it waits, or any other learner line keeps it from being called stalled, however long that takes
// (the clock here is the test's, not the machine's).
import { describe, expect, it } from 'vitest';
import { createEmbeddedQueues } from '#shared/adapters/embedded/queues';
import { StallWatch } from '#shared/runtime/stall-watch';

const WAITING = {
  type: 'waiting' as const,
  waitingFor:
    'step 5, batch 4 (feeder positions 8-9): 0 of 2 in, missing 8-9 (8 of 24 planned groups settled)',
  linesRead: 9,
};

function setup() {
  const q = createEmbeddedQueues();
  let now = 0;
  let written = 9; // lines written to the learner: all read when it said WAITING
  const watch = new StallWatch(q.queues, { limitSec: 60, now: () => now, linesWritten: () => written });
  return {
    q,
    watch,
    advance: (sec: number) => (now += sec * 1000),
    write: () => (written += 1),
  };
}

describe('StallWatch', () => {
  it('calls a run stalled once its learner has waited with every queue empty for the limit, saying for what', async () => {
    const { q, watch, advance } = setup();
    watch.onLearnerLine(WAITING);
    expect(await watch.check()).toBeUndefined(); // the quiet starts now
    advance(59);
    expect(await watch.check()).toBeUndefined();
    advance(1);
    const reason = await watch.check();
    expect(reason).toContain('the run cannot make progress: the learner has waited for groups for 60 s');
    expect(reason).toContain('batch 4 (feeder positions 8-9): 0 of 2 in, missing 8-9');
    await q.close();
  });

  it('is not a stall while a stage has a message, waiting or in flight; the quiet restarts when it is gone', async () => {
    const { q, watch, advance } = setup();
    watch.onLearnerLine(WAITING);
    await q.queues.rollout.send('{}');
    advance(600);
    expect(await watch.check()).toBeUndefined();
    const [m] = await q.queues.rollout.receive({ visibilityTimeoutSec: 900 }); // a handler at work on it
    advance(600);
    expect(await watch.check()).toBeUndefined();
    await q.queues.rollout.delete(m!.receiptHandle);
    expect(await watch.check()).toBeUndefined();
    advance(59);
    expect(await watch.check()).toBeUndefined();
    advance(1);
    expect(await watch.check()).toContain('cannot make progress');
    await q.close();
  });

  it('counts scored groups waiting for the learner, not the ones it holds', async () => {
    const { q, watch, advance } = setup();
    watch.onLearnerLine(WAITING);
    await q.queues['scored-groups'].send('{}');
    advance(600);
    expect(await watch.check()).toBeUndefined();
    await q.queues['scored-groups'].receive({ visibilityTimeoutSec: 3600 }); // handed to the learner
    expect(await watch.check()).toBeUndefined();
    advance(60);
    expect(await watch.check()).toContain('cannot make progress');
    await q.close();
  });

  it('a group written to the learner after it said it waits is work it is on, however long its step takes, until it waits again', async () => {
    const { q, watch, advance, write } = setup();
    watch.onLearnerLine(WAITING);
    await watch.check();
    advance(30);
    write(); // the bridge hands it the group it waited for: it trains a step that outlasts the limit
    advance(3600);
    expect(await watch.check()).toBeUndefined();
    advance(3600);
    expect(await watch.check()).toBeUndefined();
    // idle again, having read that line: the watch starts over
    watch.onLearnerLine({ ...WAITING, linesRead: 10 });
    expect(await watch.check()).toBeUndefined();
    advance(60);
    expect(await watch.check()).toContain('cannot make progress');
    await q.close();
  });

  it('a waiting line said before the learner read what was written to it does not start a watch', async () => {
    const { q, watch, advance, write } = setup();
    write(); // written, but not read yet when the learner's idle tick said it waits
    watch.onLearnerLine(WAITING);
    advance(3600);
    expect(await watch.check()).toBeUndefined();
    advance(3600);
    expect(await watch.check()).toBeUndefined();
    await q.close();
  });

  it('any other learner line (a step, a drop, a publish) ends the watch until it waits again', async () => {
    const { q, watch, advance } = setup();
    expect(await watch.check()).toBeUndefined(); // never said it waits
    watch.onLearnerLine(WAITING);
    await watch.check();
    advance(59);
    watch.onLearnerLine({ type: 'dropped', groupId: 'e0-p8', reason: 'dead_lettered' });
    advance(600);
    expect(await watch.check()).toBeUndefined();
    watch.onLearnerLine(WAITING);
    expect(await watch.check()).toBeUndefined();
    advance(60);
    expect(await watch.check()).toContain('cannot make progress');
    await q.close();
  });
});
