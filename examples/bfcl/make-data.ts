// Writes the shipped BFCL subset (deterministic: fixed entry ids of bfcl-eval 2026.3.23, prepared by BFCL's own
// loader, converted by the `bfcl` converter, with the plain tool-calling system prompt). Run:
//   npx tsx examples/bfcl/make-data.ts [OUT_DIR]      (default: examples/bfcl/data)
// For the seed's full data, write the files with `toolrl bfcl dataset` instead (see README.md).
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeSharedBfclEnvs } from '#shared/bfcl/client';
import { writeBfclDataset } from '#shared/bfcl/dataset';

const here = dirname(fileURLToPath(import.meta.url));
const outDir = process.argv[2] ?? join(here, 'data');
const ids = (category: string, ns: number[]) => ns.map((n) => `multi_turn_${category}_${n}`);

/** Each stage's file holds trainer.batch_prompts (8) rows, so a learner step is an epoch of the stage. */
const FILES: Record<string, string[]> = {
  // Format stage: single-class entries with two user turns, the shortest tasks, to learn the call format.
  format: ids('base', [3, 38, 64, 70, 100, 104, 150, 155]),
  // Base stage: multi_turn_base across the class mixes.
  base: ids('base', [0, 14, 28, 51, 102, 112, 152, 171]),
  // Full stage: two of each category (base, missing function, missing parameter, long context).
  full: [
    ...ids('base', [1, 57]),
    ...ids('miss_func', [5, 120]),
    ...ids('miss_param', [10, 160]),
    ...ids('long_context', [20, 110]),
  ],
  // Validation: one per category, tasks no training file uses.
  val: [
    ...ids('base', [180]),
    ...ids('miss_func', [60]),
    ...ids('miss_param', [130]),
    ...ids('long_context', [170]),
  ],
};

for (const [name, entryIds] of Object.entries(FILES)) {
  const summary = await writeBfclDataset({
    out: join(outDir, `${name}.parquet`),
    ids: entryIds,
    promptType: 'toolcall',
  });
  console.log(`${name}: ${summary.rows} rows (${Object.keys(summary.data_sources).join(', ')})`);
}
await closeSharedBfclEnvs();
