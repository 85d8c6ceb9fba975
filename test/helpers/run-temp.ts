// One temp folder per test run: the unit project's global setup points TMPDIR (read by os.tmpdir(), Python's
// tempfile and most tools) at a fresh folder before any test worker starts, so the workers and every process they
// start inherit it, and its teardown removes the folder. The suite runs on the same machine again and again, and
// what its tests and the libraries under them leave in the temp dir would otherwise pile up (each CDK app
// synthesized without an outdir writes a `cdk.out*` folder of ~5 MB: 68 of them, 316 MB, a run of the unit project).
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Points TMPDIR at a new folder; returns the teardown that removes it and restores TMPDIR. */
export function useRunTempDir(project: string): () => void {
  const previous = process.env.TMPDIR;
  const dir = mkdtempSync(join(tmpdir(), `toolrl-${project}-run-`));
  // Open to every user, sticky, as the OS temp dir is (mkdtemp makes it 0700): the code sandbox runs programs
  // under a throwaway uid that must reach their folders in it (test/unit/tools/sandbox-caps.test.ts).
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(dir, { recursive: true, force: true });
  };
}
