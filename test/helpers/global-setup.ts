// Builds the tiny model and its rollout bundle once, before any test file runs: tests that need it then find it
// built, instead of waiting inside their own timeout for another worker's build (a minute or more on 2 busy
// cores). Other variants (int8, int4, contrib; benchmarks) are built on first use, under their lock.
import { tinyBundle } from '../../bench/support/tiny-model.ts';

export default async function setup(): Promise<void> {
  await tinyBundle();
}
