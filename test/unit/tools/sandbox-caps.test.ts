// Caps per sandbox, not per process: several processes that each stay under the memory limit are stopped when
// together they pass it, and a program that fills its disk stops at the disk limit (under bwrap nothing it
// writes reaches the host's disk). Programs hold what they took and sleep, so whether the tree is caught does
// not depend on how fast this machine is.
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PythonSandbox } from '#shared/tools/code/sandbox';

let workRoot: string;
beforeAll(() => {
  workRoot = mkdtempSync(join(tmpdir(), 'sandbox-caps-'));
  chmodSync(workRoot, 0o711); // as the OS temp dir is: a run's throwaway uid crosses it to reach its TMPDIR
});
afterAll(() => rmSync(workRoot, { recursive: true, force: true }));

/** Bytes under `dir` on the host. */
function hostBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += statSync(join(e.parentPath, e.name)).size;
  }
  return total;
}

// Four processes of ~60 MB each (the pages written, so they are really held) under a 128 MB cap: each one is
// far below it, the four together are not.
const FOUR_PROCESSES = `
import os, time
pids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        block = b"x" * (60 << 20)
        time.sleep(600)
        os._exit(0)
    pids.append(pid)
block = b"x" * (60 << 20)
print("all allocated", flush=True)
time.sleep(600)
`;

// Files of 1 MiB (each under the per-file limit), 20 in TMPDIR, then 20 in the work dir, held: 40 MiB against
// an 8 MiB disk.
const DISK_FILL = `
import os, tempfile, time
print("tmp", tempfile.gettempdir(), flush=True)
written = 0
try:
    for i in range(20):
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(b"x" * (1 << 20))
        written += 1
    for i in range(20):
        with open(f"f{i}", "wb") as f:
            f.write(b"x" * (1 << 20))
        written += 1
finally:
    print("written", written, flush=True)
time.sleep(600)
`;

// Wall clocks and test timeouts far beyond the work: only the limit under test can end these runs.
describe.each(['bwrap', 'process'] as const)('caps for the whole process tree (%s)', (isolation) => {
  const box = (limits: Record<string, number>) =>
    new PythonSandbox({ isolation, workRoot, limits: { wallS: 300, cpuS: 300, ...limits } });

  it('stops four processes that together pass the memory limit, each one under it', async () => {
    const r = await box({ memoryMb: 128, maxProcesses: 8 }).run({ code: FOUR_PROCESSES });
    expect(r.limit).toBe('memory'); // not its 600 s sleep, not the 300 s wall clock
    expect(r.exitCode).not.toBe(0);
  });

  it('stops a disk fill at the disk limit, files in the work dir and in TMPDIR alike', async () => {
    const before = hostBytes(workRoot);
    const r = await box({ maxDiskMb: 8, maxFileMb: 4 }).run({ code: DISK_FILL });
    expect(r.limit).toBe('disk');
    // TMPDIR is the sandbox's own (a tmpfs under bwrap, a measured folder of the run without namespaces)
    const tmp = /tmp (\S+)/.exec(r.stdout)?.[1];
    expect(isolation === 'bwrap' ? tmp : tmp?.startsWith(workRoot)).toBe(
      isolation === 'bwrap' ? '/tmp' : true,
    );
    // under bwrap the tmpfs refuses past its size (ENOSPC); without namespaces the watcher stops the program
    if (isolation === 'bwrap') expect(Number(/written (\d+)/.exec(r.stdout)?.[1])).toBeLessThanOrEqual(4);
    expect(hostBytes(workRoot)).toBe(before); // the run's folder is gone
  });
});

describe('what bwrap keeps off the host', () => {
  it('writes nothing the program makes to the host disk, and its inputs count against its disk', async () => {
    const box = new PythonSandbox({ isolation: 'bwrap', workRoot, limits: { maxDiskMb: 2, wallS: 300 } });
    const seen: number[] = [];
    const watching = setInterval(() => seen.push(hostBytes(workRoot)), 5);
    const r = await box.run({
      code: 'import os\nwith open("out", "wb") as f:\n    f.write(b"y" * (1 << 20))\nprint(sorted(os.listdir(".")))',
    });
    clearInterval(watching);
    expect(r.stdout).toBe("['main.py', 'out']\n");
    expect(Math.max(0, ...seen)).toBeLessThan(64 * 1024); // main.py only, never the 1 MiB file
    const big = await box.run({
      code: 'print("ran")',
      files: { 'data.bin': Buffer.alloc(3 << 20).toString('base64') },
    });
    expect(big.limit).toBe('disk');
    expect(big.stdout).toBe('');
  });
});
