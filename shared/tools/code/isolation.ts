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

/**
 * The venv `npm run setup` makes for the sandbox: the system's python3 with numpy and sympy pinned as the AWS code
 * runner's image has them (shared/tools/code/requirements.lock).
 */
export const SANDBOX_VENV_PYTHON = fileURLToPath(
  new URL('../../../.cache/sandbox-venv/bin/python', import.meta.url),
);

/**
 * Resolves the interpreter once: a configured path, else the sandbox venv (numpy, sympy), else the system's
 * python3, else python3 on PATH.
 */
export function findPython(configured?: string): PythonInstall {
  const key = configured ?? '';
  const hit = pythonCache.get(key);
  if (hit) return hit;
  const candidates = configured
    ? [configured]
    : [SANDBOX_VENV_PYTHON, '/usr/bin/python3', '/usr/local/bin/python3', 'python3'];
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

/** Where to look for bubblewrap: directories in order, then the copy `scripts/setup.sh` unpacks when not root. */
export interface BwrapSearch {
  dirs: string[];
  localCopy: string;
}

/** /usr/bin, /usr/local/bin, the PATH, then the repository's .cache/bwrap/usr/bin/bwrap. */
export function defaultBwrapSearch(): BwrapSearch {
  return {
    dirs: ['/usr/bin', '/usr/local/bin', ...(process.env.PATH ?? '').split(':')],
    localCopy: fileURLToPath(new URL('../../../.cache/bwrap/usr/bin/bwrap', import.meta.url)),
  };
}

/** The first bwrap binary of the search, or null when there is none. */
export function findBwrap(search: BwrapSearch = defaultBwrapSearch()): string | null {
  const candidates = [
    ...search.dirs.filter((d) => d.startsWith('/')).map((d) => `${d}/bwrap`),
    search.localCopy,
  ];
  return candidates.find((p) => p.startsWith('/') && existsSync(p)) ?? null;
}

let bwrapBinary: string | null | undefined;

/** The bwrap this process uses (found once): on the system or PATH, else setup's copy in .cache/bwrap. */
export function bwrapPath(): string | null {
  if (bwrapBinary === undefined) bwrapBinary = findBwrap();
  return bwrapBinary;
}

const bwrapProbes = new Map<string, boolean>();

/**
 * True when the bwrap binary at `binary` can create the namespaces we use (it cannot on Lambda or in some
 * containers). The probe runs that very binary: a copy found only in .cache/bwrap is not on the probe's PATH.
 */
export function bwrapWorks(binary: string): boolean {
  const hit = bwrapProbes.get(binary);
  if (hit !== undefined) return hit;
  const r = spawnSync(
    binary,
    // The /tmp options of bwrapArgs too: --perms on a tmpfs needs bubblewrap >= 0.5.
    [
      ...namespaceArgs(),
      ...systemBinds([]),
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--perms',
      '1777',
      '--tmpfs',
      '/tmp',
      'true',
    ],
    {
      timeout: 10_000,
      env: { PATH: '/usr/bin:/bin' },
    },
  );
  const ok = r.status === 0;
  bwrapProbes.set(binary, ok);
  return ok;
}

/** True when this process's bwrap (see bwrapPath) exists and works. */
export function bwrapUsable(): boolean {
  const binary = bwrapPath();
  return binary !== null && bwrapWorks(binary);
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
  const made = new Set<string>();
  for (const root of extraRoots) {
    if (root.startsWith('/usr/') || root === '/usr') continue;
    // The folders above a venv outside /usr (the sandbox venv in the checkout's .cache) must be traversable by
    // the throwaway uid the program runs as; bwrap would make them root-only.
    const parts = root.split('/').filter(Boolean);
    for (let i = 1; i < parts.length; i++) {
      const dir = `/${parts.slice(0, i).join('/')}`;
      // /tmp is the program's own tmpfs (mounted first, 1777): left as it is.
      if (
        made.has(dir) ||
        ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/tmp'].includes(dir)
      )
        continue;
      made.add(dir);
      args.push('--perms', '0755', '--dir', dir);
    }
    args.push('--ro-bind', root, root);
  }
  return args;
}

export const SANDBOX_WORKDIR = '/workdir';
/** Where the run's input files (main.py, request files) are visible, read-only, to be copied into the work dir. */
export const SANDBOX_INPUT = '/.input';

/**
 * The full bwrap command line before the program: namespaces, read-only system, and the only writable places, two
 * tmpfs of bounded size: /tmp (`tmpfsBytes`) and the work dir (`workdirBytes`). Nothing the program writes reaches
 * the host's disk; its inputs come from `inputDir`, bound read-only.
 */
export function bwrapArgs(opts: {
  inputDir: string;
  python: PythonInstall;
  tmpfsBytes: number;
  workdirBytes: number;
}): string[] {
  return [
    ...namespaceArgs(),
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    // bwrap makes a tmpfs root-owned 0755; the program's uid (or the mapped user) must write /tmp (TMPDIR).
    // Mounted before the binds: a venv in a checkout under /tmp (a CI clone) is bound on top of it, not hidden.
    '--perms',
    '1777',
    '--size',
    String(opts.tmpfsBytes),
    '--tmpfs',
    '/tmp',
    ...systemBinds(opts.python.roots),
    '--perms',
    '1777',
    '--size',
    String(opts.workdirBytes),
    '--tmpfs',
    SANDBOX_WORKDIR,
    '--ro-bind',
    opts.inputDir,
    SANDBOX_INPUT,
    '--chdir',
    SANDBOX_WORKDIR,
    '--hostname',
    'sandbox',
    // The root tmpfs bwrap builds is writable by root only; this makes it read-only for everyone.
    '--remount-ro',
    '/',
  ];
}
