// LearnerBridge.idle, which lends the learner's cores to the rollout decoder (embedded.ts, spareCores): the learner
// is idle once it says it is waiting and has been sent nothing since, busy from the moment a line is written to it
// until it says it waits again, and idle for good once it is done or gone. The learner here is a stand-in process
// that speaks the stdio protocol and waits for each line the test sends before it answers; the groups come through
// the real embedded scored-groups queue.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createEmbeddedQueues } from '#shared/adapters/embedded/queues';
import { LearnerBridge } from '#shared/runtime/learner-bridge';

// Answers nothing to the first group; after the second it reports a step and waits again; on SIGTERM it is done.
const FAKE = `
const out = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
out({ type: 'ready', policyVersion: 0, resumedFromStep: null });
out({ type: 'waiting', waitingFor: 'step 1, batch 0', linesRead: 0 });
let read = 0;
process.stdin.setEncoding('utf8');
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  for (let i; (i = buf.indexOf('\\n')) >= 0; ) {
    buf = buf.slice(i + 1);
    read++;
    if (read === 2) {
      out({ type: 'step', step: 1, metrics: { step: 1 } });
      out({ type: 'waiting', waitingFor: 'step 2, batch 1', linesRead: read });
    }
  }
});
process.on('SIGTERM', () => {
  out({ type: 'done' });
  setTimeout(() => process.exit(0), 50);
});
`;

async function until(what: string, cond: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const group = (id: string) =>
  JSON.stringify({
    schemaVersion: 1,
    runId: 'r-idle',
    groupId: id,
    manifestKey: `runs/r-idle/groups/${id}.json`,
    sha256: 'a'.repeat(64),
  });

describe('LearnerBridge.idle', () => {
  it('is idle while the learner waits with nothing unread, busy once sent a line, idle again when done', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'learner-idle-'));
    const python = join(dir, 'python');
    writeFileSync(join(dir, 'fake.mjs'), FAKE);
    writeFileSync(python, `#!/bin/sh\nexec "${process.execPath}" "${join(dir, 'fake.mjs')}"\n`, {
      mode: 0o755,
    });
    const queues = createEmbeddedQueues();
    const lines: string[] = [];
    const bridge = new LearnerBridge({
      python,
      root: dir,
      runId: 'r-idle',
      scoredGroups: queues.queues['scored-groups'],
      deadLetter: queues.dlqs['scored-groups'],
      notify: async () => {},
      logPath: join(dir, 'learner.log'),
      onLine: (l) => lines.push(l.type),
    });
    expect(bridge.idle).toBe(false); // not started: nothing said yet
    bridge.start();
    try {
      await until('the first waiting line', () => lines.includes('waiting'));
      expect(bridge.idle).toBe(true);

      await queues.queues['scored-groups'].send(group('e0-p1'));
      await until('the first group written', () => bridge.linesWritten === 1);
      // Written and not yet answered: the learner has work it has not said it finished.
      expect(bridge.idle).toBe(false);

      await queues.queues['scored-groups'].send(group('e0-p2'));
      await until('the step and the next waiting line', () => lines.length >= 4);
      expect(lines).toEqual(['ready', 'waiting', 'step', 'waiting']);
      expect(bridge.idle).toBe(true);

      const exit = await bridge.terminate(5_000);
      expect(exit.done).toBe(true);
      expect(lines.at(-1)).toBe('done');
      expect(bridge.idle).toBe(true);
    } finally {
      if (bridge.running) await bridge.terminate(1_000);
      await queues.close();
    }
  });
});
