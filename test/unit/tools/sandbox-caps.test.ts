// Caps per sandbox, not per process: several processes that each stay under the memory limit are stopped when
// together they pass it, and a program that fills its disk stops at the disk limit (under bwrap nothing it
// writes reaches the host's disk). Programs hold what they took and sleep, so whether the tree is caught does
// not depend on how fast this machine is.
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PythonSandbox } from '#shared/tools/code/sandbox';

let workRoot: string;
beforeAll(() => {
  workRoot = mkdtempSync(join(tmpdir(), 'sandbox-caps-'));
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
        time.sleep(30)
        os._exit(0)
    pids.append(pid)
block = b"x" * (60 << 20)
print("all allocated", flush=True)
time.sleep(30)
`;

// 40 files of 1 MiB (each under the per-file limit), then hold them: 40 MiB against an 8 MiB disk.
const DISK_FILL = `
import os, tempfile, time
written = 0
try:
    for i in range(20):
        with open(f"f{i}", "wb") as f:
            f.write(b"x" * (1 << 20))
        written += 1
    for i in range(20):
        with tempfile.NamedTemporaryFile(delete=False) as f:
            f.write(b"x" * (1 << 20))
        written += 1
finally:
    print("written", written, flush=True)
time.sleep(30)
`;

describe.each(['bwrap', 'process'] as const)('caps for the whole process tree (%s)', (isolation) => {
  const box = (limits: Record<string, number>) =>
    new PythonSandbox({ isolation, workRoot, limits: { wallS: 20, cpuS: 20, ...limits } });

  it('stops four processes that together pass the memory limit, each one under it', async () => {
    const r = await box({ memoryMb: 128, maxProcesses: 8 }).run({ code: FOUR_PROCESSES });
    expect(r.limit).toBe('memory');
    expect(r.exitCode).not.toBe(0);
    expect(r.wallMs).toBeLessThan(20_000); // stopped, not run out to its 30 s sleep or the wall clock
  });

  it('stops a disk fill at the disk limit, files in the work dir and in TMPDIR alike', async () => {
    const before = hostBytes(workRoot);
    const r = await box({ maxDiskMb: 8, maxFileMb: 4 }).run({ code: DISK_FILL });
    expect(r.limit).toBe('disk');
    // under bwrap the tmpfs refuses the 9th MiB (ENOSPC); without namespaces the watcher stops the program
    if (isolation === 'bwrap') expect(Number(/written (\d+)/.exec(r.stdout)?.[1])).toBeLessThanOrEqual(8);
    expect(hostBytes(workRoot)).toBe(before); // the run's folder is gone
  });
});

describe('what bwrap keeps off the host', () => {
  it('writes nothing the program makes to the host disk, and its inputs count against its disk', async () => {
    const box = new PythonSandbox({ isolation: 'bwrap', workRoot, limits: { maxDiskMb: 2, wallS: 10 } });
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
