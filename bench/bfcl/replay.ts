// BFCL environment state: replay vs snapshot vs live, and the ground-truth sweep. One command:
//   npx tsx bench/bfcl/replay.ts [entries per category, default 200]
// 1. In Python (bench/bfcl/state_cost.py, one process): per call, rebuild the state by replaying the calls before
//    it, or restore a pickled snapshot from a file and save the new one, or run on kept live instances.
// 2. Through the tool-call path's client (TypeScript -> JSON lines -> Python): per call latency with live states
//    kept (`cache_states` 256, a warm process) against replay on every call (`cache_states` 0, what a cold
//    serverless invocation sees), over the same ground-truth sequences, in this process.
// 3. Correctness sweep: every multi-turn entry's ground truth, parsed to JSON calls and scored by the checker path
//    of the `bfcl` reward, must pass every turn.
import { execFile } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { BfclEnv, closeSharedBfclEnvs } from '#shared/bfcl/client';
import { writeBfclDataset } from '#shared/bfcl/dataset';
import { bfclEntryOf, groundTruthOf } from '#shared/bfcl/entry';
import { BFCL_PACKAGE_DIR, ensureBfclEnv } from '#shared/bfcl/env';
import type { BfclCall } from '#shared/bfcl/protocol';
import { readDataset } from '#shared/data/dataset';

const run = promisify(execFile);
const HERE = fileURLToPath(new URL('.', import.meta.url));
const limit = Number(process.argv[2] ?? 200);
const f = (x: number) => x.toFixed(2);

const { python } = await ensureBfclEnv();
const py = await run(python, [join(HERE, 'state_cost.py'), String(limit)], {
  env: {
    ...process.env,
    PYTHONPATH: [BFCL_PACKAGE_DIR, process.env.PYTHONPATH].filter(Boolean).join(delimiter),
  },
  maxBuffer: 16 << 20,
});
const cost = JSON.parse(py.stdout) as {
  calls: number;
  trajectories: number;
  meanMsPerCall: Record<string, number>;
  byHistory: Record<string, Record<string, number>>;
  meanMsPerTrajectory: Record<string, number>;
  callsPerTrajectory: { mean: number; max: number };
  snapshotBytes: { mean: number; max: number };
};
console.log(
  `\n1. In Python, ${cost.calls} calls of ${cost.trajectories} ground-truth trajectories (base + long_context)`,
);
console.log(
  `   calls per trajectory: mean ${f(cost.callsPerTrajectory.mean)}, max ${cost.callsPerTrajectory.max}`,
);
console.log('   mode      ms/call  ms/trajectory   history 0-2   3-5   6-9   10+');
for (const m of ['replay', 'snapshot', 'live']) {
  const h = Object.values(cost.byHistory).map((b) => f(b[m]!).padStart(5));
  console.log(
    `   ${m.padEnd(9)} ${f(cost.meanMsPerCall[m]!).padStart(7)}  ${f(cost.meanMsPerTrajectory[m]!).padStart(13)}   ${h.join(' ')}`,
  );
}
console.log(
  `   snapshot size: mean ${Math.round(cost.snapshotBytes.mean)} B, max ${cost.snapshotBytes.max} B (pickle); ` +
    `replay/snapshot ${f(cost.meanMsPerCall.replay! / cost.meanMsPerCall.snapshot!)}x, replay/live ${f(cost.meanMsPerCall.replay! / cost.meanMsPerCall.live!)}x`,
);

// 2 and 3 read the rows as training sees them.
const out = join(HERE, '..', '..', '.cache', 'bench-bfcl-all.parquet');
await writeBfclDataset({ out, limit });
const rows = await readDataset(out);
const env = new BfclEnv();
const truths = await Promise.all(
  rows.map(async (r) => {
    const entry = bfclEntryOf(r.extra_info);
    const turns = await Promise.all(
      groundTruthOf(r.reward_model.ground_truth).map((t) => env.parse(entry, t)),
    );
    return { row: r, entry, turns };
  }),
);

// Both clients run side by side, trajectory by trajectory in alternating order, so load on a shared machine
// falls on both alike.
const live = new BfclEnv({ cacheStates: 256 });
const replay = new BfclEnv({ cacheStates: 0 });
await Promise.all([live.hello(), replay.hello()]);
const spent = new Map<BfclEnv, number>([
  [live, 0],
  [replay, 0],
]);
let calls = 0;
const trajectories = truths.filter((t) => /base|long_context/.test(String(t.row.extra_info.id)));
for (const [i, { entry, turns }] of trajectories.entries()) {
  for (const client of i % 2 === 0 ? [live, replay] : [replay, live]) {
    const history: BfclCall[] = [];
    const t0 = performance.now();
    for (const call of turns.flat()) {
      await client.execute(entry, history, [call]); // one request per call, as the tool-call stage sends them
      history.push(call);
    }
    spent.set(client, spent.get(client)! + performance.now() - t0);
  }
  calls += turns.flat().length;
}
await Promise.all([live.close(), replay.close()]);
const liveMs = spent.get(live)! / calls;
const replayMs = spent.get(replay)! / calls;
console.log(
  `\n2. Through the client (JSON lines), ${calls} calls, one request each, the two clients alternating`,
);
console.log(`   live states kept:  ${f(liveMs)} ms per call`);
console.log(`   replay every call: ${f(replayMs)} ms per call  (${f(replayMs / liveMs)}x live)`);

let passed = 0;
const failures: string[] = [];
const t0 = performance.now();
for (const { row, entry, turns } of truths) {
  const r = await env.score(
    entry,
    groundTruthOf(row.reward_model.ground_truth),
    turns.map((t) => (t.length ? [t] : [])),
    false,
  );
  if (r.success.valid && r.turns.every((t) => t.passed)) passed++;
  else failures.push(String(row.extra_info.id));
}
const scoreMs = (performance.now() - t0) / truths.length;
console.log(
  `\n3. Ground truth through the reward's checker path: ${passed}/${truths.length} entries pass every turn`,
);
console.log(
  `   ${f(scoreMs)} ms per trajectory scored${failures.length ? `; failing: ${failures.join(', ')}` : ''}`,
);
await env.close();
await closeSharedBfclEnvs();
