// A long-lived Python process that runs user code (tool classes, reward functions): spawned on first use, driven
// over JSON lines (protocol.ts), restarted when it dies or stops answering. What it must hold to serve (the tool
// classes and reward functions loaded into it) is recorded as setup requests and sent again to every new process;
// a request in flight when the process goes is failed with an error that says so, never dropped.
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { HostErrorTypeSchema } from './protocol.ts';
import { RpcProcess } from './rpc.ts';

/** Put on PYTHONPATH: the `toolrl_pyhost` package, read from the checkout (or the Lambda image's copy). */
export const PYHOST_PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'python');

/** The interpreter for user code: a configured one, else TOOLRL_PYTHON, else python3 on the PATH. */
export const defaultPython = (configured?: string): string =>
  configured ?? process.env.TOOLRL_PYTHON ?? 'python3';

export interface PythonHostOptions {
  /** Says whose host this is in every error (`the Python tool host`). */
  label: string;
  python?: string;
  /** Working directory and the first sys.path entry: the run's folder, where `my_tools.MyTool` is found. */
  baseDir: string;
  /** The environment the process gets (AWS_* variables are never passed on). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Seconds an instance may sit idle before the host releases it; the most it keeps live. */
  instanceTtlS?: number;
  maxInstances?: number;
  /** How much later than its own timeout an answer may come before the process is taken for stuck (ms). */
  graceMs?: number;
}

export type PythonHostErrorType = z.infer<typeof HostErrorTypeSchema> | 'host';

/** A failed request: the host's own error type, or `host` when the process died, hung or could not start. */
export class PythonHostError extends Error {
  override name = 'PythonHostError';
  constructor(
    readonly type: PythonHostErrorType,
    message: string,
  ) {
    super(message);
  }
}

export interface RequestOptions {
  /** Bound on each call into user code, enforced by the host (seconds). */
  timeoutS?: number;
  /** How many such calls the request may make (a rebuild replays earlier calls): scales the stuck-process watchdog. */
  calls?: number;
  /** Aborting sends the host a cancel for this request. */
  signal?: AbortSignal;
}

/** The Python host (`python -m toolrl_pyhost`) over the JSON-lines RPC (rpc.ts), with its protocol's timeouts. */
export class PythonHost {
  private readonly rpc: RpcProcess;
  private closed = false;

  constructor(readonly options: PythonHostOptions) {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(options.env ?? process.env))
      if (v !== undefined && !k.startsWith('AWS_')) env[k] = v;
    env.PYTHONPATH = [PYHOST_PACKAGE_DIR, options.baseDir, env.PYTHONPATH].filter(Boolean).join(delimiter);
    env.PYTHONUNBUFFERED = '1';
    const args = ['-m', 'toolrl_pyhost', '--ttl', String(options.instanceTtlS ?? 900)];
    args.push('--max-instances', String(options.maxInstances ?? 4096));
    this.rpc = new RpcProcess({
      label: options.label,
      python: defaultPython(options.python),
      args,
      cwd: options.baseDir,
      env,
      error: (type, message) => {
        const known = HostErrorTypeSchema.safeParse(type);
        return new PythonHostError(known.success ? known.data : 'host', message);
      },
    });
  }

  get python(): string {
    return defaultPython(this.options.python);
  }

  /** Processes started so far (the first is 1): a test reads it to see a restart. */
  get starts(): number {
    return this.rpc.starts;
  }

  /** A request that every process must have served before it serves others (loading a class, a function). */
  setup(method: string, params: Record<string, unknown>): Promise<unknown> {
    if (this.closed) return this.refuse();
    return this.rpc.setup(method, params, this.callOptions({ timeoutS: 120 }));
  }

  request(method: string, params: Record<string, unknown>, opts: RequestOptions = {}): Promise<unknown> {
    if (this.closed) return this.refuse();
    return this.rpc.call(method, params, this.callOptions(opts));
  }

  private refuse(): Promise<never> {
    return Promise.reject(new PythonHostError('host', `${this.options.label} is closed`));
  }

  /**
   * The host cancels a late call itself; an answer later still than its timeout (x the calls it may make) plus the
   * grace means the process is stuck (a coroutine that blocks its event loop, a C call that never returns): it is
   * killed and restarted.
   */
  private callOptions(opts: RequestOptions) {
    const { timeoutS, signal } = opts;
    return {
      ...(timeoutS !== undefined
        ? {
            deadlineMs: timeoutS * 1000 * (opts.calls ?? 1) + (this.options.graceMs ?? 5000),
            fields: { timeout: timeoutS },
          }
        : {}),
      ...(signal ? { signal } : {}),
    };
  }

  /** Ends the process: EOF first (it releases every live instance), SIGKILL if it has not gone in 5 s. */
  async close(): Promise<void> {
    this.closed = true;
    await this.rpc.close();
  }
}
