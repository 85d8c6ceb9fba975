// The built-in sandbox against the attacks the issue lists, under bubblewrap (what setup installs)
// and, for what it promises, in plain-process mode (what holds on Lambda).

import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bwrapUsable, findBwrap } from '#shared/tools/code/isolation';
import { PythonSandbox } from '#shared/tools/code/sandbox';

const SECRET = 'sk-do-not-leak-3f9a';
process.env.AWS_SECRET_ACCESS_KEY = SECRET;
process.env.AWS_ACCESS_KEY_ID = 'AKIA-DO-NOT-LEAK';
process.env.TOOLRL_SECRET_TOKEN = SECRET;

let workRoot: string;
beforeAll(() => {
  workRoot = mkdtempSync(join(tmpdir(), 'sandbox-test-'));
});
afterAll(() => rmSync(workRoot, { recursive: true, force: true }));

/** Host processes whose command line contains `marker` (they would have outlived their run). */
function hostProcessesWith(marker: string): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) found.push(Number(pid));
    } catch {
      // exited
    }
  }
  return found;
}

describe('bubblewrap isolation', () => {
  it('is available here (scripts/setup.sh installs bubblewrap)', () => {
    expect(bwrapUsable()).toBe(true);
  });

  const box = () => new PythonSandbox({ isolation: 'bwrap', workRoot, limits: { wallS: 4, cpuS: 4 } });

  it('runs ordinary code and returns stdout, stderr and the exit code', async () => {
    const r = await box().run({
      code: 'import sys\nprint(6*7)\nprint("warn", file=sys.stderr)\nsys.exit(3)',
    });
    expect(r).toMatchObject({
      exitCode: 3,
      stdout: '42\n',
      stderr: 'warn\n',
      limit: null,
      isolation: 'bwrap',
    });
  });

  it('runs a venv that lives under /tmp (a checkout there, as a CI clone is): the private /tmp does not hide it', async () => {
    // Its own folder: workRoot must hold nothing after a run (the work-dir test below checks).
    const venv = join(mkdtempSync(join(tmpdir(), 'sandbox-venv-test-')), 'venv');
    const made = spawnSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', venv], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    expect(venv.startsWith('/tmp/')).toBe(true);
    const r = await new PythonSandbox({
      isolation: 'bwrap',
      workRoot,
      python: join(venv, 'bin', 'python'),
      limits: { wallS: 30, cpuS: 30 },
    }).run({
      code: 'import sys\nprint(sys.prefix)\nopen("/tmp/x", "w").write("ok")\nprint(open("/tmp/x").read())',
    });
    expect(r).toMatchObject({ exitCode: 0, stdout: `${venv}\nok\n`, isolation: 'bwrap' });
    rmSync(dirname(venv), { recursive: true, force: true });
  });

  it("shows a traceback with only the program's own frames", async () => {
    const r = await box().run({ code: 'x = 1\n1/0\n' });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain('File "main.py", line 2');
    expect(r.stderr).toContain('ZeroDivisionError');
    expect(r.stderr).not.toContain('launcher');
  });

  it('gives no secret of the parent environment to the program, through os.environ or /proc', async () => {
    const code = `
import os
seen = [k for k in os.environ]
leaks = []
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            data = open(f'/proc/{pid}/environ', 'rb').read()
        except OSError:
            continue
        if b'${SECRET}' in data or b'AKIA' in data:
            leaks.append(pid)
print(sorted(seen))
print('leaks', leaks)
print('pids', len([p for p in os.listdir('/proc') if p.isdigit()]))
`;
    const r = await box().run({ code });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).not.toMatch(/AWS|TOOLRL|SECRET/);
    expect(r.stdout).toContain('leaks []');
    // Its own pid namespace: bwrap's init, the launcher, the program (and nothing of the host).
    expect(Number(/pids (\d+)/.exec(r.stdout)?.[1])).toBeLessThanOrEqual(4);
  });

  it('has no network: a server listening on the host loopback cannot be reached', async () => {
    const server: Server = createServer((s) => s.end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const code = `
import socket
try:
    socket.create_connection(('127.0.0.1', ${port}), timeout=2).recv(5)
    print('connected')
except OSError as e:
    print('blocked', type(e).__name__)
try:
    socket.getaddrinfo('example.com', 80)
    print('resolved')
except OSError:
    print('no dns')
`;
      const r = await box().run({ code });
      expect(r.stdout).toContain('blocked');
      expect(r.stdout).toContain('no dns');
      expect(r.stdout).not.toContain('connected');
    } finally {
      server.close();
    }
  });

  it('cannot write outside its work dir; the work dir is removed after the run', async () => {
    const hostTarget = join(workRoot, 'escaped.txt');
    const code = `
import os
for path in ['/etc/pwned', '/usr/pwned', '/pwned', '/root/pwned', '${hostTarget}', '/workdir/../pwned']:
    try:
        open(path, 'w').write('x')
        print('wrote', path)
    except OSError as e:
        print('denied', path)
open('inside.txt', 'w').write('ok')
print('cwd', os.getcwd(), sorted(os.listdir('.')))
`;
    const r = await box().run({ code });
    expect(r.stdout).not.toContain('wrote');
    expect(r.stdout).toContain("cwd /workdir ['inside.txt', 'main.py']");
    expect(readdirSync(workRoot)).toEqual([]); // neither the escaped file nor the run's work dir remain
  });

  it('gives the program a private /tmp it can write and read (TMPDIR=/tmp)', async () => {
    const code = `
import os, stat, tempfile
open('/tmp/note.txt', 'w').write('kept')
print(open('/tmp/note.txt').read(), oct(stat.S_IMODE(os.stat('/tmp').st_mode)))
with tempfile.NamedTemporaryFile(mode='w+') as f:
    f.write('tmp'); f.seek(0); print(f.read(), f.name.startswith('/tmp/'))
`;
    const r = await box().run({ code });
    expect(r.stderr).toBe('');
    // 0o1777: everyone may create files there, only their owner may remove them (sticky), as on a host.
    expect(r.stdout).toBe('kept 0o1777\ntmp True\n');
  });

  it('stops an infinite loop at the wall clock', async () => {
    const t0 = performance.now();
    const r = await new PythonSandbox({ isolation: 'bwrap', workRoot, limits: { wallS: 1.5, cpuS: 10 } }).run(
      {
        code: 'while True: pass',
      },
    );
    expect(r.limit).toBe('wall_time');
    expect(performance.now() - t0).toBeLessThan(4000);
  });

  it('stops a CPU hog at its CPU limit', async () => {
    // A wall clock far beyond the second of CPU it needs: a starved machine can take long to give it that.
    const r = await new PythonSandbox({ isolation: 'bwrap', workRoot, limits: { wallS: 300, cpuS: 1 } }).run({
      code: 'while True: pass',
    });
    expect(r.limit).toBe('cpu_time'); // stopped by RLIMIT_CPU (1 s), not by the wall clock
  });

  it('caps memory: a memory bomb fails with MemoryError instead of taking the machine', async () => {
    const r = await new PythonSandbox({ isolation: 'bwrap', workRoot, limits: { memoryMb: 256 } }).run({
      code: 'blocks = []\nwhile True:\n    blocks.append(bytearray(50 * 1024 * 1024))',
    });
    expect(r.limit).toBe('memory');
    expect(r.stderr).toContain('MemoryError');
  });

  it('caps processes: a fork bomb is contained and leaves nothing behind', async () => {
    const marker = `${Math.floor(Math.random() * 1e6)}.4242`;
    const code = `
import os
started = failed = 0
for _ in range(500):
    try:
        if os.fork() == 0:
            os.execv('/bin/sleep', ['sleep', '${marker}'])
        started += 1
    except OSError:
        failed += 1
print('started', started, 'failed', failed)
`;
    const r = await new PythonSandbox({
      isolation: 'bwrap',
      workRoot,
      limits: { maxProcesses: 16, wallS: 5 },
    }).run({ code });
    const started = Number(/started (\d+)/.exec(r.stdout)?.[1]);
    expect(started).toBeLessThan(16);
    expect(Number(/failed (\d+)/.exec(r.stdout)?.[1])).toBeGreaterThan(400);
    expect(hostProcessesWith(marker)).toEqual([]);
  });

  it('survives a classic fork bomb within the wall clock', async () => {
    const t0 = performance.now();
    const r = await new PythonSandbox({
      isolation: 'bwrap',
      workRoot,
      limits: { maxProcesses: 16, wallS: 2 },
    }).run({
      code: 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass',
    });
    expect(['wall_time', 'processes']).toContain(r.limit);
    expect(performance.now() - t0).toBeLessThan(6000);
  });

  it('stops an output flood at the output cap', async () => {
    const r = await new PythonSandbox({
      isolation: 'bwrap',
      workRoot,
      limits: { maxOutputBytes: 10_000 },
    }).run({
      code: 'while True:\n    print("x" * 1000)',
    });
    expect(r.limit).toBe('output');
    expect(r.stdout.length).toBeLessThanOrEqual(10_000);
  });

  it('kills a daemon the program leaves behind', async () => {
    const marker = `${Math.floor(Math.random() * 1e6)}.4343`;
    const code = `
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/bin/sleep', ['sleep', '${marker}'])
    os._exit(0)
print('daemon started')
`;
    const r = await box().run({ code });
    expect(r.stdout).toBe('daemon started\n');
    expect(r.exitCode).toBe(0);
    expect(hostProcessesWith(marker)).toEqual([]);
  });

  it('passes stdin and input files, and fetches regular files only (never through a planted link)', async () => {
    const code = `
import os, sys
data = open('data/in.txt').read()
print(data.upper(), sys.stdin.read())
open('out.txt', 'w').write('result')
os.symlink('/etc/passwd', 'leak.txt')
`;
    const r = await box().run({
      code,
      stdin: 'from stdin',
      files: { 'data/in.txt': Buffer.from('hello').toString('base64') },
      fetchFiles: ['out.txt', 'leak.txt', '../etc/passwd'],
    });
    expect(r.stdout).toBe('HELLO from stdin\n');
    expect(Object.keys(r.files)).toEqual(['out.txt']);
    expect(Buffer.from(r.files['out.txt']!, 'base64').toString()).toBe('result');
  });

  it('refuses input files that would land outside the work dir', async () => {
    await expect(box().run({ code: 'pass', files: { '../x': '' } })).rejects.toThrow(/inside the work dir/);
  });
});

describe('finding bubblewrap', () => {
  // scripts/setup.sh, when not root, unpacks Debian's package into .cache/bwrap: a bwrap on no PATH.
  const layout = () => {
    const root = mkdtempSync(join(workRoot, 'bwrap-layout-'));
    const localCopy = join(root, '.cache', 'bwrap', 'usr', 'bin', 'bwrap');
    mkdirSync(join(root, '.cache', 'bwrap', 'usr', 'bin'), { recursive: true });
    mkdirSync(join(root, 'empty-bin'));
    return { root, localCopy, emptyDir: join(root, 'empty-bin') };
  };

  it('uses a bwrap found only in .cache/bwrap (not on the PATH)', async () => {
    const { root, localCopy, emptyDir } = layout();
    try {
      const system = findBwrap();
      expect(system).not.toBeNull();
      copyFileSync(system!, localCopy);
      const search = { dirs: [emptyDir], localCopy };
      expect(findBwrap(search)).toBe(localCopy);
      const r = await new PythonSandbox({ workRoot: root, bwrapSearch: search }).run({ code: 'print(1)' });
      expect(r).toMatchObject({ stdout: '1\n', isolation: 'bwrap' });
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('falls back to processes under auto, and refuses isolation: bwrap, when there is no bwrap', () => {
    const { root, localCopy, emptyDir } = layout();
    try {
      const search = { dirs: [emptyDir], localCopy };
      expect(findBwrap(search)).toBeNull();
      expect(new PythonSandbox({ bwrapSearch: search }).isolation).toBe('process');
      expect(() => new PythonSandbox({ isolation: 'bwrap', bwrapSearch: search }).isolation).toThrow(
        /no bwrap binary was found/,
      );
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('process isolation (no namespaces: what holds on Lambda)', () => {
  const box = (limits = {}) =>
    new PythonSandbox({ isolation: 'process', workRoot, limits: { wallS: 4, cpuS: 4, ...limits } });

  it('scrubs the environment', async () => {
    const r = await box().run({
      code: 'import os\nprint(sorted(os.environ))\nprint(open("/proc/self/environ","rb").read())',
    });
    expect(r.isolation).toBe('process');
    expect(r.stdout).not.toMatch(/AWS|TOOLRL|do-not-leak/);
  });

  it('kills daemons and sleepers left behind when the program exits', async () => {
    const marker = `${Math.floor(Math.random() * 1e6)}.4444`;
    const code = `
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/bin/sleep', ['sleep', '${marker}'])
    os._exit(0)
print('ok')
`;
    const r = await box().run({ code });
    expect(r.stdout).toBe('ok\n');
    expect(hostProcessesWith(marker)).toEqual([]);
  });

  it('caps processes, memory and wall time', async () => {
    const bomb = await box({ maxProcesses: 8 }).run({
      code: 'import os\nn = 0\nfor _ in range(100):\n    try:\n        if os.fork() == 0:\n            import time; time.sleep(3); os._exit(0)\n        n += 1\n    except OSError:\n        pass\nprint(n)',
    });
    expect(Number(bomb.stdout.trim())).toBeLessThan(8);
    const mem = await box({ memoryMb: 200 }).run({ code: 'x = bytearray(400 * 1024 * 1024)' });
    expect(mem.limit).toBe('memory');
    // A sleeper: only the wall clock can stop it (a busy loop would race the CPU limit on a loaded machine).
    const sleeper = await box({ wallS: 1 }).run({ code: 'import time\ntime.sleep(600)' });
    expect(sleeper.limit).toBe('wall_time');
  });

  it('stops an output flood', async () => {
    const r = await box({ maxOutputBytes: 5000 }).run({ code: 'while True:\n    print("y" * 500)' });
    expect(r.limit).toBe('output');
    expect(r.stdout.length).toBeLessThanOrEqual(5000);
  });
});
