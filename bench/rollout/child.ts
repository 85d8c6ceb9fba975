// The protocol between bench/rollout/index.ts and its two measuring processes (engine, transformers.js). Each child
// loads the bundle once, warms up on the measured shape, then answers one timed run per `run` message, so the
// parent can alternate engine and reference rounds without reloading either (load swings then hit both alike).
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';

/** One timed run's figures (engine or transformers.js). */
export interface Measurement {
  engine: string;
  G: number;
  P: number;
  N: number;
  /** 1-minute load average when the run started. */
  loadAvg: number;
  totalMs: number;
  prefillTokens: number;
  prefillMs: number;
  decodeSteps: number;
  decodeTokens: number;
  /** Engine: onnxruntime's decode forward passes only; transformers.js: everything after the first token. */
  decodeMs: number;
  /** Engine only: time in the sampler (all draws). */
  sampleMs?: number;
  /** Peak resident memory of the measuring process so far (MB), as Lambda counts a function's memory. */
  maxRssMb?: number;
}

/** The arguments both children take. */
export interface ChildArgs {
  bundle: string;
  G: number;
  P: number;
  N: number;
  threads: number;
  warmupTokens: number;
  sampler: string;
  /** Engine child only: `slots` (model.slots.onnx when the bundle has it) or `standard` (model.onnx). */
  graph: string;
  /** llama.cpp child only: the GGUF of the bundle's weights and node-llama-cpp's entry module. */
  gguf?: string;
  llamaCppModule?: string;
  /** llama.cpp child only: its sampler's top-k (0: the full vocabulary, as the engine samples; 1: greedy). */
  topK?: number;
}

export function childArgs(): ChildArgs {
  const { values } = parseArgs({
    options: {
      bundle: { type: 'string' },
      n: { type: 'string', default: '8' },
      'prompt-tokens': { type: 'string', default: '128' },
      'new-tokens': { type: 'string', default: '256' },
      threads: { type: 'string', default: '2' },
      'warmup-tokens': { type: 'string', default: '16' },
      sampler: { type: 'string', default: 'onnx' },
      graph: { type: 'string', default: 'slots' },
      gguf: { type: 'string' },
      'llama-cpp-module': { type: 'string' },
      'top-k': { type: 'string' },
    },
  });
  if (!values.bundle) throw new Error('--bundle is required');
  return {
    bundle: values.bundle,
    G: Number(values.n),
    P: Number(values['prompt-tokens']),
    N: Number(values['new-tokens']),
    threads: Number(values.threads),
    warmupTokens: Number(values['warmup-tokens']),
    sampler: values.sampler!,
    graph: values.graph!,
    ...(values.gguf ? { gguf: values.gguf } : {}),
    ...(values['llama-cpp-module'] ? { llamaCppModule: values['llama-cpp-module'] } : {}),
    ...(values['top-k'] ? { topK: Number(values['top-k']) } : {}),
  };
}

type Reply = { ready: true; loadMs: number } | { result: Measurement } | { error: string };

/**
 * Child side: loads (`load`), warms up with one untimed run of the measured G and prompt and `tokens.warmup` new
 * tokens (kernel selection and arena growth for those shapes), then serves `run` messages (`tokens.measured` new
 * tokens each) until `exit`.
 */
export async function serve(
  load: () => Promise<{
    run: (newTokens: number) => Promise<Omit<Measurement, 'loadAvg'>>;
    dispose: () => Promise<void>;
  }>,
  tokens: { warmup: number; measured: number },
): Promise<void> {
  const send = (m: Reply) => process.send!(m);
  try {
    const t0 = performance.now();
    const { run, dispose } = await load();
    await run(tokens.warmup);
    send({ ready: true, loadMs: performance.now() - t0 });
    process.on('message', (msg: { cmd: 'run' | 'exit' }) => {
      if (msg.cmd === 'exit') {
        void dispose().finally(() => process.exit(0));
        return;
      }
      const loadAvg = loadavg()[0]!;
      run(tokens.measured).then(
        (r) => send({ result: { ...r, loadAvg, maxRssMb: process.resourceUsage().maxRSS / 1024 } }),
        (e: Error) => send({ error: e.stack ?? String(e) }),
      );
    });
  } catch (e) {
    send({ error: (e as Error).stack ?? String(e) });
    process.exit(1);
  }
}

/** Parent side: a started child that runs on request. */
export class Child {
  private constructor(
    private readonly proc: ReturnType<typeof fork>,
    readonly loadMs: number,
  ) {}

  static start(script: string, args: string[], cwd: string): Promise<Child> {
    const proc = fork(script, args, { cwd, execArgv: ['--import', 'tsx'], stdio: 'inherit' });
    return new Promise((ok, fail) => {
      proc.once('exit', (code) => fail(new Error(`${script} exited with ${code} before it was ready`)));
      proc.once('message', (m: Reply) => {
        proc.removeAllListeners('exit');
        if ('ready' in m) ok(new Child(proc, m.loadMs));
        else fail(new Error(`${script}: ${'error' in m ? m.error : 'unexpected reply'}`));
      });
    });
  }

  run(): Promise<Measurement> {
    return new Promise((ok, fail) => {
      const died = (code: number | null) =>
        fail(new Error(`the measuring process exited with ${code} mid-run`));
      this.proc.once('exit', died);
      this.proc.once('message', (m: Reply) => {
        this.proc.off('exit', died);
        if ('result' in m) ok(m.result);
        else fail(new Error('error' in m ? m.error : 'unexpected reply'));
      });
      this.proc.send({ cmd: 'run' });
    });
  }

  stop(): Promise<void> {
    if (this.proc.exitCode !== null || !this.proc.connected) return Promise.resolve(); // already gone
    return new Promise((ok) => {
      this.proc.once('exit', () => ok());
      this.proc.send({ cmd: 'exit' });
    });
  }
}
