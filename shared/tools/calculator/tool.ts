// `calculator`: arithmetic with mathjs (>= 15.2, whose expression parser cannot reach JavaScript), Python's
// operators and `math.` names included (`2**10`, `10 // 3`, `math.sqrt(2)`, `25 × 37`), restricted to an
// allow-list of nodes and functions, evaluated in a worker thread whose time and heap
// are bounded, so hostile input can neither run code nor hang or exhaust the process.
// The call's time limit (`timeout`) starts once a worker has loaded mathjs: on a loaded machine that start-up took
// longer than the default 15 s, and a call that timed out for it made the same seed give a different run.
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from 'node:worker_threads';
import { z } from 'zod';
import { defineToolKind } from '../kind.ts';
import { formatSeconds } from '../limits.ts';
import { type Tool, type ToolContext, ToolFailure } from '../types.ts';

export const MAX_EXPRESSION_CHARS = 2000;

/**
 * How long a fresh worker may take to load mathjs before the call fails. Far above any start-up seen (seconds on a
 * machine at load 12); only a worker that can never start reaches it.
 */
export const WORKER_START_LIMIT_MS = 600_000;

const WORKER_URL = new URL('./worker.mjs', import.meta.url);

const Config = z.object({
  /** Evaluation budget per expression, ms. */
  max_eval_ms: z.number().int().positive().default(1000),
  /** Heap of the evaluation worker, MiB. */
  max_heap_mb: z.number().int().positive().default(64),
});

export const calculatorKind = defineToolKind({
  kind: 'calculator',
  defaults: { timeoutS: 15, numWorkers: 8 },
  config: Config,
  build: (options) => ({ tools: [new Calculator(options.max_eval_ms, options.max_heap_mb)] }),
});

export class Calculator implements Tool {
  /** The registry leaves the time limit to the calculator, which starts it after the worker's start-up. */
  readonly ownsTimeout = true;
  readonly schema = {
    type: 'function' as const,
    function: {
      name: 'calculator',
      description:
        'Evaluate an arithmetic expression, e.g. "17 * 23", "2**10 % 7", "10 // 3", "math.sqrt(2) / 3", "5 km to mile". Functions: sqrt, log, sin, cos, round, factorial, gcd, comb, min, max, ...',
      parameters: {
        type: 'object',
        properties: { expression: { type: 'string', description: 'The expression to evaluate.' } },
        required: ['expression'],
        additionalProperties: false,
      },
    },
  };
  /** Idle workers; one worker per in-flight call so a runaway evaluation is killed alone. */
  private readonly idle: Worker[] = [];
  private readonly busy = new Set<Worker>();

  constructor(
    private readonly maxEvalMs: number,
    private readonly maxHeapMb: number,
    /** The evaluation worker's script (tests start one that is slow to load). */
    private readonly workerUrl: URL = WORKER_URL,
  ) {}

  async execute(args: Record<string, unknown>, ctx: ToolContext): Promise<string> {
    const expression = String(args.expression);
    if (expression.length > MAX_EXPRESSION_CHARS)
      throw new ToolFailure(
        'invalid_arguments',
        `expression is longer than ${MAX_EXPRESSION_CHARS} characters`,
      );
    if (expression.trim() === '') throw new ToolFailure('invalid_arguments', 'expression is empty');
    const worker = this.idle.pop() ?? this.spawn();
    this.busy.add(worker);
    let healthy = true;
    try {
      await this.started(worker, ctx.signal).catch((failure: unknown) => {
        healthy = false;
        throw failure;
      });
      // The evaluation budget: the tool's own (`max_eval_ms`) or the call's `timeout`, whichever is shorter.
      const limitMs = Math.min(this.maxEvalMs, ctx.timeoutMs);
      return await new Promise<string>((resolve, reject) => {
        const fail = (failure: ToolFailure) => {
          healthy = false;
          reject(failure);
        };
        const { results, started } = this.channels.get(worker)!;
        // Only the time the worker has spent on the expression counts (worker.mjs): when the timer fires, a result
        // already sent is taken, and a worker that has not started (or started late) gets the rest of its budget.
        const check = () => {
          const sent = receiveMessageOnPort(results);
          if (sent) return onMessage(sent.message as { ok: boolean; value?: string; error?: string });
          const since = Number(Atomics.load(started, 0));
          const ran = since === 0 ? 0 : Date.now() - since;
          if (ran < limitMs) {
            timer = setTimeout(check, limitMs - ran);
            return;
          }
          fail(
            limitMs < this.maxEvalMs
              ? new ToolFailure('timeout', `the tool did not finish within ${formatSeconds(limitMs)}`)
              : new ToolFailure(
                  'resource_limit',
                  `expression took longer than ${this.maxEvalMs} ms to evaluate`,
                ),
          );
        };
        let timer = setTimeout(check, limitMs);
        const onAbort = () => fail(new ToolFailure('timeout', 'the calculation was cancelled'));
        const onMessage = (m: { ok: boolean; value?: string; error?: string }) => {
          if (m.ok) resolve(m.value ?? '');
          else reject(new ToolFailure('execution_error', m.error ?? 'evaluation failed'));
        };
        const onError = (err: Error) =>
          fail(
            /memory|heap/i.test(err.message)
              ? new ToolFailure(
                  'resource_limit',
                  'the expression needs more memory than the calculator allows',
                )
              : new ToolFailure('internal_error', `calculator worker failed: ${err.message}`),
          );
        const onExit = () => fail(new ToolFailure('internal_error', 'calculator worker exited'));
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        results.once('message', onMessage);
        worker.once('error', onError).once('exit', onExit);
        worker.postMessage({ expression });
        // Listeners are removed in `finally`, whichever way the promise settles.
        const cleanup = () => {
          clearTimeout(timer);
          ctx.signal.removeEventListener('abort', onAbort);
          results.off('message', onMessage);
          worker.off('error', onError).off('exit', onExit);
        };
        this.cleanups.set(worker, cleanup);
      });
    } finally {
      this.cleanups.get(worker)?.();
      this.cleanups.delete(worker);
      this.busy.delete(worker);
      // A worker that timed out or crashed may still be spinning: it is terminated, never reused.
      if (healthy) this.idle.push(worker);
      else void worker.terminate();
    }
  }

  private readonly cleanups = new Map<Worker, () => void>();

  /** Waits for the worker to load mathjs, up to WORKER_START_LIMIT_MS, or until the caller gives up. */
  private started(worker: Worker, signal: AbortSignal): Promise<void> {
    if (signal.aborted)
      return Promise.reject(new ToolFailure('timeout', 'the call was cancelled before it started'));
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const stopped = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new ToolFailure(
              'internal_error',
              `calculator worker did not start within ${WORKER_START_LIMIT_MS / 1000} s`,
            ),
          ),
        WORKER_START_LIMIT_MS,
      );
      timer.unref();
      onAbort = () => reject(new ToolFailure('timeout', 'the calculation was cancelled'));
      signal.addEventListener('abort', onAbort, { once: true });
    });
    return Promise.race([this.ready.get(worker)!, stopped]).finally(() => {
      clearTimeout(timer);
      if (onAbort) signal.removeEventListener('abort', onAbort);
    });
  }

  private readonly ready = new WeakMap<Worker, Promise<void>>();

  /** Each worker's result port and the epoch ms at which it started its expression (0 when it is not on one). */
  private readonly channels = new WeakMap<Worker, { results: MessagePort; started: BigInt64Array }>();

  private spawn(): Worker {
    const { port1, port2 } = new MessageChannel();
    const started = new SharedArrayBuffer(8);
    const worker = new Worker(this.workerUrl, {
      resourceLimits: { maxOldGenerationSizeMb: this.maxHeapMb, maxYoungGenerationSizeMb: 16 },
      env: {},
      workerData: { results: port2, started },
      transferList: [port2],
    });
    worker.unref();
    port1.unref();
    this.channels.set(worker, { results: port1, started: new BigInt64Array(started) });
    worker.once('exit', () => port1.close());
    this.ready.set(
      worker,
      new Promise<void>((resolve, reject) => {
        worker.once('message', () => resolve());
        worker.once('error', (e) =>
          reject(new ToolFailure('internal_error', `calculator worker failed to start: ${e.message}`)),
        );
        worker.once('exit', () => reject(new ToolFailure('internal_error', 'calculator worker exited')));
      }),
    );
    this.ready.get(worker)!.catch(() => {});
    // An idle worker that dies is just dropped from the pool.
    worker.on('exit', () => {
      const i = this.idle.indexOf(worker);
      if (i >= 0) this.idle.splice(i, 1);
    });
    worker.on('error', () => {});
    return worker;
  }

  async close(): Promise<void> {
    const all = [...this.idle, ...this.busy];
    this.idle.length = 0;
    await Promise.allSettled(all.map((w) => w.terminate()));
  }
}
