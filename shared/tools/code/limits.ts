// What a sandboxed run may use (SandboxLimits, the defaults a code_interpreter tool starts from), what a caller asks
// for (RunRequest) and how a run ended (RunOutcome, LimitHit): the sandbox's contract, shared by the sandbox
// (sandbox.ts), the tool, the code server and the code-runner function, none of which needs the sandbox's code for it.
import type { BwrapSearch, Isolation } from './isolation.ts';

/** Every limit of a run, in one object: what the tool config (`code_interpreter`) and the server set. */
export interface SandboxLimits {
  /** Wall clock per run, seconds. */
  wallS: number;
  /** CPU time per process, seconds (RLIMIT_CPU). */
  cpuS: number;
  /**
   * Memory of the whole process tree, MiB: its processes' proportional set sizes summed while it runs (stopped
   * within one measuring interval, 20 ms, of passing it), and RLIMIT_AS at the same size for each process.
   */
  memoryMb: number;
  /** Processes of the whole tree: RLIMIT_NPROC (per run: its own uid or user namespace), and the tree counted. */
  maxProcesses: number;
  /** stdout + stderr kept; past it the program is stopped. */
  maxOutputBytes: number;
  /** Largest file the program may write (RLIMIT_FSIZE), MiB; also the size of its /tmp under bwrap. */
  maxFileMb: number;
  /**
   * Everything the program may keep in its work dir, MiB (input files included): under bwrap the size of the
   * tmpfs it is; without namespaces the work dir and TMPDIR are measured while it runs, like memory.
   */
  maxDiskMb: number;
}

export const DEFAULT_SANDBOX_LIMITS: SandboxLimits = {
  wallS: 10,
  cpuS: 10,
  memoryMb: 1024,
  maxProcesses: 32,
  maxOutputBytes: 64 * 1024,
  maxFileMb: 16,
  maxDiskMb: 64,
};

export interface SandboxOptions {
  /** `auto` uses bubblewrap when it works here, else plain processes. */
  isolation?: Isolation | 'auto';
  /** Interpreter to run (e.g. a venv's python with numpy); default: the system's python3. */
  python?: string;
  limits?: Partial<SandboxLimits>;
  /**
   * Where per-run work dirs are created (default: the OS temp dir). Without namespaces and as root, the run's
   * throwaway uid reaches its TMPDIR there by path, so this folder must be traversable by others (o+x).
   */
  workRoot?: string;
  /** Where to look for bubblewrap (default: the system, the PATH, then setup's copy in .cache/bwrap). */
  bwrapSearch?: BwrapSearch;
}

export interface RunRequest {
  code: string;
  stdin?: string;
  /** Files placed in the work dir first: relative path -> base64 content. */
  files?: Record<string, string>;
  /** Files read back from the work dir after the run (regular files only, never through links). */
  fetchFiles?: string[];
  /** Per-run overrides, capped by the sandbox's own limits. */
  wallS?: number;
  memoryMb?: number;
}

export type LimitHit = 'wall_time' | 'cpu_time' | 'memory' | 'processes' | 'output' | 'file_size' | 'disk';

export interface RunOutcome {
  /** Negative: killed by that signal. null: killed from outside (wall clock, output cap, cancel). */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  limit: LimitHit | null;
  wallMs: number;
  /** CPU seconds of the program (0 under bwrap, which does not report it). */
  cpuS: number;
  files: Record<string, string>;
  isolation: Isolation;
}
