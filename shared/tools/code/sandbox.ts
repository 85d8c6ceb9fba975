// The built-in Python sandbox. Each run gets a fresh empty work dir (removed after), a scrubbed
// environment, a throwaway uid (when we are root), rlimits on CPU, memory, processes and file size,
// a wall clock, an output cap, and no process that outlives it. Memory, processes and disk are bounded for
// the run's whole process tree, not per process (tree-watch.ts measures the tree while it runs; see the
// limits below for what bounds each).
//
// `isolation: bwrap` (bubblewrap, installed by scripts/setup.sh) adds new pid/net/ipc/uts namespaces:
// no network, and every process of the run dies with the namespace when the program exits or bwrap is
// killed; a read-only view of /usr and a few /etc files; its own /proc, /dev; a work dir and /tmp that are
// size-capped tmpfs (nothing reaches the host's disk); no_new_privs and nosuid mounts. The program runs directly
// under bwrap (no supervisor process), so a call costs little more than a bare interpreter start.
//
// On AWS Lambda there are no namespaces and no root, so `isolation: process` (chosen by `auto`) is what
// holds there: the same rlimits (RLIMIT_NPROC then counts all of the function user's processes), the
// fresh work dir, the scrubbed environment (the runtime's AWS credentials are never passed on), the
// wall clock and output cap, and a supervising launcher that is a child subreaper and kills every
// descendant, daemons included, before it reports. What this cannot do there is keep the program from the
// process that started it: same uid, so the program can read its /proc/<pid>/environ, the role's
// credentials included (an audit showed it). So on AWS the tool-call function never runs a program itself: the code_interpreter invokes the
// code-runner function (functions/code-runner, shared/tools/code/lambda-runner.ts), which runs this sandbox,
// one program per invocation, in its own execution environment with a role that may only write its own logs
// and no pipeline resource in its environment. Network access (egress), the runner's /tmp across
// invocations of a warm environment, and those worthless credentials remain; SandboxFusion
// (`sandbox_fusion_url`) is the choice where the programs need to be cut off from the network too.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  bwrapArgs,
  bwrapPath,
  bwrapWorks,
  findBwrap,
  findPython,
  type Isolation,
  SANDBOX_INPUT,
  SANDBOX_WORKDIR,
} from './isolation.ts';
import {
  DEFAULT_SANDBOX_LIMITS,
  type LimitHit,
  type RunOutcome,
  type RunRequest,
  type SandboxLimits,
  type SandboxOptions,
} from './limits.ts';
import { classify, killUid, parseReport, signalGroup } from './reap.ts';
import { type TreeLimit, watchTree } from './tree-watch.ts';
import { chownTree, fetchFiles, insideDir, parseFetchedFiles } from './workdir.ts';

const LAUNCHER = readFileSync(fileURLToPath(new URL('./launcher.py', import.meta.url)), 'utf8');

/** The only variables a sandboxed program sees: nothing of the parent's environment. */
const SANDBOX_ENV = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  LANG: 'C.UTF-8',
  LC_ALL: 'C.UTF-8',
  TMPDIR: '/tmp',
  OMP_NUM_THREADS: '1',
  OPENBLAS_NUM_THREADS: '1',
  MKL_NUM_THREADS: '1',
  MPLBACKEND: 'Agg',
};

/** Throwaway uids for runs: far above login and container sub-uid ranges. */
const UID_BASE = 1_500_000_000;

export class PythonSandbox {
  readonly limits: SandboxLimits;
  private isolationResolved: Isolation | null = null;
  private bwrapBinary: string | null = null;
  private readonly running = new Set<ChildProcess>();

  constructor(private readonly opts: SandboxOptions = {}) {
    this.limits = { ...DEFAULT_SANDBOX_LIMITS, ...opts.limits };
  }

  /** Which isolation runs use; decided on first use (probing bwrap spawns a process). */
  get isolation(): Isolation {
    if (this.isolationResolved) return this.isolationResolved;
    const wanted = this.opts.isolation ?? 'auto';
    if (wanted === 'process') {
      this.isolationResolved = 'process';
      return this.isolationResolved;
    }
    const binary = this.opts.bwrapSearch ? findBwrap(this.opts.bwrapSearch) : bwrapPath();
    const usable = binary !== null && bwrapWorks(binary);
    if (wanted === 'bwrap' && !usable)
      throw new Error(
        binary === null
          ? 'isolation: bwrap was asked for but no bwrap binary was found (run scripts/setup.sh)'
          : `isolation: bwrap was asked for but ${binary} cannot create namespaces here`,
      );
    this.bwrapBinary = usable ? binary : null;
    this.isolationResolved = usable ? 'bwrap' : 'process';
    return this.isolationResolved;
  }

  async run(req: RunRequest, signal?: AbortSignal): Promise<RunOutcome> {
    const isolation = this.isolation;
    const python = findPython(this.opts.python);
    const wallS = Math.min(req.wallS ?? this.limits.wallS, this.limits.wallS);
    const memoryMb = Math.min(req.memoryMb ?? this.limits.memoryMb, this.limits.memoryMb);
    const root = process.getuid?.() === 0;
    const uid = root ? UID_BASE + randomInt(100_000_000) : null;
    // base/work is the program's work dir (without namespaces) or its inputs (under bwrap: copied into the
    // tmpfs work dir from there); base/tmp is its TMPDIR without namespaces.
    const base = await mkdtemp(join(this.opts.workRoot ?? tmpdir(), 'toolrl-sandbox-'));
    const workdir = join(base, 'work');
    const tmp = join(base, 'tmp');
    try {
      // The run's uid must reach base/tmp by its path (TMPDIR): base may be crossed, not listed; work and tmp
      // stay closed to every other uid (a concurrent run's program included).
      chmodSync(base, 0o711);
      mkdirSync(workdir, { mode: 0o700 });
      mkdirSync(tmp, { mode: 0o700 });
      await writeFile(join(workdir, 'main.py'), req.code);
      for (const [name, b64] of Object.entries(req.files ?? {})) {
        const target = insideDir(workdir, name);
        mkdirSync(dirname(target), { recursive: true });
        await writeFile(target, Buffer.from(b64, 'base64'));
      }
      if (uid !== null && isolation === 'process') {
        chownTree(workdir, uid, req.files);
        chownSync(tmp, uid, uid); // else tempfile would fall back to the host's /tmp, unmeasured
      }
      // Names are checked here, against the host path, before the launcher looks for them in the tmpfs.
      const fetch = (req.fetchFiles ?? []).filter((n) => {
        try {
          insideDir(workdir, n);
          return !n.includes('\n');
        } catch {
          return false;
        }
      });
      // The launcher's positional arguments (see the top of launcher.py).
      const config = [
        isolation === 'bwrap' ? SANDBOX_WORKDIR : workdir,
        uid === null ? '-' : String(uid),
        String(wallS),
        String(Math.max(1, Math.ceil(Math.min(this.limits.cpuS, wallS)))),
        String(memoryMb * 1024 * 1024),
        String(this.limits.maxProcesses),
        String(this.limits.maxFileMb * 1024 * 1024),
        isolation,
        isolation === 'bwrap' ? SANDBOX_INPUT : '-',
        isolation === 'bwrap' && fetch.length > 0 ? fetch.join('\n') : '-',
      ];
      const launch = [python.executable, '-I', '-c', LAUNCHER, ...config];
      const [cmd, ...args] =
        isolation === 'bwrap'
          ? [
              this.bwrapBinary!,
              ...bwrapArgs({
                inputDir: workdir,
                python,
                tmpfsBytes: this.limits.maxFileMb * 1024 * 1024,
                workdirBytes: this.limits.maxDiskMb * 1024 * 1024,
              }),
              ...launch,
            ]
          : launch;
      const outcome = await this.spawnAndWait(cmd!, args, {
        workdir,
        tmp,
        isolation,
        uid,
        wallS,
        memoryMb,
        fetch: fetch.length,
        stdin: req.stdin,
        signal,
      });
      if (isolation === 'process') outcome.files = await fetchFiles(workdir, fetch);
      return outcome;
    } finally {
      await rm(base, { recursive: true, force: true, maxRetries: 3 });
    }
  }

  private spawnAndWait(
    cmd: string,
    args: string[],
    o: {
      workdir: string;
      tmp: string;
      isolation: Isolation;
      uid: number | null;
      wallS: number;
      memoryMb: number;
      /** Files the launcher sends back on fd 3 under bwrap. */
      fetch: number;
      stdin?: string;
      signal?: AbortSignal;
    },
  ): Promise<RunOutcome> {
    const started = performance.now();
    // The launcher supervises and reports on fd 3 without namespaces; under bwrap fd 3 carries fetched files.
    const supervised = o.isolation === 'process';
    const fd3 = supervised || o.fetch > 0;
    return new Promise<RunOutcome>((resolvePromise, reject) => {
      const child = spawn(cmd, args, {
        cwd: supervised ? o.workdir : '/',
        env: supervised ? { ...SANDBOX_ENV, TMPDIR: o.tmp } : SANDBOX_ENV,
        stdio: fd3 ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
        detached: true, // own process group, so the kill below reaches the launcher and its helpers
      });
      this.running.add(child);
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let outputBytes = 0;
      let limit: LimitHit | null = null;
      let status = '';
      let programPid: number | null = null;
      let hardKilled = false;

      // Under bwrap, killing bwrap kills the pid namespace and so every process of the run. Without
      // it, the program has its own group, and with a throwaway uid every process of that uid goes.
      const hardKill = () => {
        if (hardKilled) return;
        hardKilled = true;
        signalGroup(child.pid, 'SIGKILL');
        if (supervised) {
          if (programPid) signalGroup(programPid, 'SIGKILL');
          if (o.uid !== null) void killUid(o.uid);
        }
      };
      // Without namespaces, first ask the launcher to stop the program (it kills every descendant).
      const stop = (why: LimitHit) => {
        limit ??= why;
        if (!supervised) return hardKill();
        if (child.pid) signalGroup(child.pid, 'SIGUSR1');
        setTimeout(hardKill, 1000).unref();
      };
      const collect = (sink: Buffer[]) => (chunk: Buffer) => {
        const room = this.limits.maxOutputBytes - outputBytes;
        if (room > 0) sink.push(room >= chunk.length ? chunk : chunk.subarray(0, room));
        outputBytes += chunk.length;
        if (outputBytes > this.limits.maxOutputBytes) stop('output');
      };
      child.stdout!.on('data', collect(out));
      child.stderr!.on('data', collect(err));
      if (supervised)
        (child.stdio[3] as NodeJS.ReadableStream).on('data', (c: Buffer) => {
          status += c.toString();
          const first = status.split('\n')[0];
          if (programPid === null && first && status.includes('\n'))
            programPid = (JSON.parse(first) as { child: number }).child;
        });
      let fetched = '';
      if (!supervised && fd3)
        (child.stdio[3] as NodeJS.ReadableStream).on('data', (c: Buffer) => {
          fetched += c.toString();
          // base64 of at most `fetch` files of 1 MiB and their names: more is the program writing to fd 3
          if (fetched.length > o.fetch * 1.5 * 1024 * 1024 + 64 * 1024) stop('output');
        });
      // Memory, processes (and, without namespaces, disk) of the whole tree, measured while it runs.
      const tree = child.pid
        ? watchTree({
            root: child.pid,
            helpers: 1, // bwrap's init in the pid namespace, or the launcher's kill helper at the end
            memoryBytes: o.memoryMb * 1024 * 1024,
            processes: this.limits.maxProcesses,
            disk: supervised
              ? { dirs: [o.workdir, o.tmp], bytes: this.limits.maxDiskMb * 1024 * 1024 }
              : undefined,
            onLimit: (why: TreeLimit) => stop(why),
          })
        : null;
      child.stdin!.on('error', () => {}); // the program may exit without reading its input
      child.stdin!.end(o.stdin ?? '');
      // The wall clock: ours under bwrap; the launcher's otherwise, with ours as a backstop.
      const wallTimer = setTimeout(
        () => {
          limit ??= 'wall_time';
          hardKill();
        },
        (o.wallS + (supervised ? 3 : 0)) * 1000,
      );
      const onAbort = () => hardKill();
      o.signal?.addEventListener('abort', onAbort, { once: true });

      child.on('error', (e) => {
        clearTimeout(wallTimer);
        tree?.stop();
        this.running.delete(child);
        reject(new Error(`cannot start the sandbox (${cmd}): ${e.message}`));
      });
      child.on('close', (code, killedBy) => {
        clearTimeout(wallTimer);
        tree?.stop();
        o.signal?.removeEventListener('abort', onAbort);
        this.running.delete(child);
        const stdout = Buffer.concat(out).toString('utf8');
        const stderr = Buffer.concat(err).toString('utf8');
        let exitCode: number | null;
        let cpuS = 0;
        if (supervised) {
          const report = parseReport(status);
          if (!report && !limit && !hardKilled)
            return reject(new Error(`the sandbox failed to start (exit ${code}): ${stderr.slice(-500)}`));
          if (report?.wall_timeout) limit ??= 'wall_time';
          exitCode = report?.exit_code ?? null;
          cpuS = report?.cpu_s ?? 0;
        } else {
          if (!hardKilled && code === 1 && stderr.startsWith('bwrap:'))
            return reject(new Error(`the sandbox failed to start: ${stderr.slice(0, 500)}`));
          // bwrap exits with the program's status, or 128 + the signal that killed it.
          exitCode = killedBy ? null : code !== null && code > 128 && code < 160 ? -(code - 128) : code;
        }
        limit ??= classify(exitCode, cpuS, this.limits.cpuS, stderr);
        resolvePromise({
          exitCode,
          stdout,
          stderr,
          limit,
          wallMs: performance.now() - started,
          cpuS,
          files: supervised ? {} : parseFetchedFiles(fetched),
          isolation: o.isolation,
        });
      });
    });
  }

  /** Kills every run still in progress. */
  async close(): Promise<void> {
    for (const child of this.running) signalGroup(child.pid, 'SIGKILL');
  }
}
