// Prefix caching (`rollout.enable_prefix_caching`, shared/policy/prompt-head.ts) against prompts prefilled whole, in
// one script: `toolrl eval`'s work (evaluate()) on the same policy and data, the option off and on, the order
// alternating each round. Prints each variant's median wall-clock, the engine's prefill, accuracy, and the ratio.
//   npx tsx bench/rollout/prefix-cache.ts --policy runs/<runId>/policy/v24 [--config examples/smollm2/run.yaml]
//       [--data examples/smollm2/data/val.parquet] [--rounds 1]
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadRunConfig } from '#shared/config/resolve';
import type { LoopStats } from '#shared/policy/decode-loop';
import { evaluate } from '#shared/runtime/evaluate';

const { values: args } = parseArgs({
  options: {
    policy: { type: 'string' },
    config: { type: 'string', default: 'examples/smollm2/run.yaml' },
    data: { type: 'string', default: 'examples/smollm2/data/val.parquet' },
    rounds: { type: 'string', default: '1' },
  },
});
if (!args.policy)
  throw new Error('usage: npx tsx bench/rollout/prefix-cache.ts --policy DIR [--config FILE]');
const sourceDir = dirname(resolve(args.config));
const base = loadRunConfig(readFileSync(args.config, 'utf8'), args.config, [], sourceDir).config;

interface Timed {
  ms: number;
  accuracy: number | null;
  stats: LoopStats;
}

async function once(on: boolean): Promise<Timed> {
  const config = { ...base, rollout: { ...base.rollout, enable_prefix_caching: on } };
  let stats: LoopStats | undefined;
  const t0 = performance.now();
  const summary = await evaluate({
    policyDir: args.policy!,
    dataPath: args.data,
    config,
    sourceDir,
    onRollouts: (s) => {
      stats = s;
    },
  });
  return { ms: performance.now() - t0, accuracy: summary.accuracy, stats: stats! };
}

const runs: Record<'off' | 'on', Timed[]> = { off: [], on: [] };
for (let r = 0; r < Number(args.rounds); r++)
  for (const on of r % 2 === 0 ? [false, true] : [true, false]) runs[on ? 'on' : 'off'].push(await once(on));

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const line = (name: string, t: Timed[]) => {
  const s = t[0]!.stats;
  return `${name.padEnd(22)} ${(median(t.map((x) => x.ms)) / 1000).toFixed(1).padStart(6)} s   prefill ${s.prefillTokens} tokens in ${(s.prefillMs / 1000).toFixed(1)} s   accuracy ${t[0]!.accuracy === null ? '-' : `${(100 * t[0]!.accuracy).toFixed(1)}%`}`;
};
console.log(`${cpus()[0]?.model.trim()}, ${cpus().length} cores; ${args.rounds} round(s), medians`);
console.log(line('prefilled whole', runs.off));
console.log(line('prefix caching', runs.on));
console.log(
  `prefix caching / whole: ${(median(runs.on.map((x) => x.ms)) / median(runs.off.map((x) => x.ms))).toFixed(2)}x the wall-clock`,
);
