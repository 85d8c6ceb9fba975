// Before any test file runs:
// - every test worker's temp dir is one folder of this run, removed when it ends (run-temp.ts);
// - the tiny model and its rollout bundle are built once: tests that need it then find it built, instead of
//   waiting inside their own timeout for another worker's build (a minute or more on 2 busy cores). Other
//   variants (int8, int4, contrib; benchmarks) are built on first use, under their lock.
import { tinyBundle } from '../../bench/support/tiny-model.ts';
import { useRunTempDir } from './run-temp.ts';

export default async function setup(): Promise<() => void> {
  const teardown = useRunTempDir('unit');
  try {
    await tinyBundle();
  } catch (error) {
    teardown();
    throw error;
  }
  return teardown;
}
