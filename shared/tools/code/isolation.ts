// Finds the Python to run and whether bubblewrap can isolate it here, and builds bwrap's arguments:
// new pid/net/ipc/uts namespaces, a read-only view of the system, a private /tmp, /proc and /dev.
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Isolation = 'bwrap' | 'process';

export interface PythonInstall {
  executable: string;
  /** Directories the interpreter reads at run time (its prefix, and a venv's base prefix). */
  roots: string[];
}

const pythonCache = new Map<string, PythonInstall>();

/** Resolves the interpreter once: a configured path, else the system's python3, else python3 on PATH. */
export function findPython(configured?: string): PythonInstall {
  const key = configured ?? '';
  const hit = pythonCache.get(key);
  if (hit) return hit;
  const candidates = configured ? [configured] : ['/usr/bin/python3', '/usr/local/bin/python3', 'python3'];
  for (const cand of candidates) {
    if (cand.includes('/') && !existsSync(cand)) continue;
    const r = spawnSync(
      cand,
      ['-I', '-c', 'import sys,json;print(json.dumps([sys.executable,sys.prefix,sys.base_prefix]))'],
      {
        encoding: 'utf8',
        timeout: 10_000,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      },
    );
    if (r.status !== 0) continue;
    const [exe, prefix, basePrefix] = JSON.parse(r.stdout) as [string, string, string];
    // A venv's python is a symlink into the base install; keep the venv path so site-packages resolve.
    const executable = cand.includes('/') ? cand : exe;
    const install = { executable, roots: [...new Set([prefix, basePrefix, dirname(realpathSync(exe))])] };
    pythonCache.set(key, install);
    return install;
  }
  throw new Error(
    configured
      ? `cannot run the configured python ${configured}`
      : 'no python3 found (set `python` in the code_interpreter config, or use `sandbox_fusion_url`)',
  );
}

let bwrapProbe: boolean | undefined;
let bwrapBinary: string | undefined;

/** bwrap on PATH, else the copy `scripts/setup.sh` unpacks into .cache/bwrap when not root. */
export function bwrapPath(): string {
  if (bwrapBinary) return bwrapBinary;
  const local = fileURLToPath(new URL('../../../.cache/bwrap/usr/bin/bwrap', import.meta.url));
  const onPath = [
    '/usr/bin/bwrap',
    '/usr/local/bin/bwrap',
    ...(process.env.PATH ?? '').split(':').map((d) => `${d}/bwrap`),
  ];
  bwrapBinary = [...onPath, local].find((p) => p.startsWith('/') && existsSync(p)) ?? 'bwrap';
  return bwrapBinary;
}

/** True when `bwrap` exists and can create the namespaces we use (it cannot on Lambda or in some containers). */
export function bwrapUsable(): boolean {
  if (bwrapProbe !== undefined) return bwrapProbe;
  const r = spawnSync(
    'bwrap',
    [...namespaceArgs(), ...systemBinds([]), '--proc', '/proc', '--dev', '/dev', 'true'],
    {
      timeout: 10_000,
      env: { PATH: '/usr/bin:/bin' },
    },
  );
  bwrapProbe = r.status === 0;
  return bwrapProbe;
}

function namespaceArgs(): string[] {
  const userns = process.getuid?.() !== 0 ? ['--unshare-user'] : [];
  return [
    ...userns,
    '--unshare-pid',
    '--unshare-net',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    '--die-with-parent',
    '--new-session',
  ];
}

/** Read-only binds of the system: /usr and its merged-usr links, the few /etc files programs need. */
function systemBinds(extraRoots: string[]): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const dir of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    if (!existsSync(dir)) continue;
    const st = lstatSync(dir);
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else args.push('--ro-bind', dir, dir);
  }
  for (const f of [
    '/etc/ld.so.cache',
    '/etc/ld.so.conf',
    '/etc/ld.so.conf.d',
    '/etc/localtime',
    '/etc/alternatives',
    '/etc/passwd',
    '/etc/group',
    '/etc/nsswitch.conf',
    '/etc/ssl/certs',
    '/etc/mime.types',
  ]) {
    args.push('--ro-bind-try', f, f);
  }
  for (const root of extraRoots) {
    if (!root.startsWith('/usr/') && root !== '/usr') args.push('--ro-bind', root, root);
  }
  return args;
}

export const SANDBOX_WORKDIR = '/workdir';

/** The full bwrap command line before the program: namespaces, read-only system, private /tmp, the work dir. */
export function bwrapArgs(opts: { workdir: string; python: PythonInstall; tmpfsBytes: number }): string[] {
  return [
    ...namespaceArgs(),
    ...systemBinds(opts.python.roots),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(opts.tmpfsBytes),
    '--tmpfs',
    '/tmp',
    '--bind',
    opts.workdir,
    SANDBOX_WORKDIR,
    '--chdir',
    SANDBOX_WORKDIR,
    '--hostname',
    'sandbox',
    // The root tmpfs bwrap builds is writable by root only; this makes it read-only for everyone.
    '--remount-ro',
    '/',
  ];
}
