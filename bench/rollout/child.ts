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
  /** CPU time of the measuring process over the run (ms, every thread): the work, whatever the machine's load. */
  cpuMs?: number;
}

/**
 * The agreement check: the next-token distribution at `k` positions of one token sequence. The reference
 * (llama.cpp) is asked without `follow` and continues the prompt greedily, k tokens; the engine is asked with
 * `follow` = those tokens and reads the same k positions in one pass (teacher-forced), reporting besides its own top
 * the probabilities of the ids in `ask` (the reference's top ids, per position).
 */
export interface ProbeRequest {
  prompt: number[];
  k: number;
  top: number;
  follow?: number[];
  ask?: number[][];
}

export interface ProbeResult {
  /** The k tokens the positions are read after: the greedy continuation, or `follow`. */
  tokens: number[];
  /** Per position, the `top` most likely next tokens (softmax at temperature 1), most likely first. */
  top: { id: number; p: number }[][];
  /** Per position, the probability of each id of `ask`. */
  asked?: number[][];
}

/** Top `n` of a softmax over `logits` (float64 sums), and the probabilities of `ask`. */
export function softmaxTop(
  logits: Float32Array,
  n: number,
  ask: readonly number[] = [],
): { top: { id: number; p: number }[]; asked: number[] } {
  let max = Number.NEGATIVE_INFINITY;
  for (const x of logits) if (x > max) max = x;
  let z = 0;
  for (const x of logits) z += Math.exp(x - max);
  const best: { id: number; p: number }[] = [];
  for (let id = 0; id < logits.length; id++) {
    const x = logits[id]!;
    if (best.length < n || x > best.at(-1)!.p) {
      best.push({ id, p: x });
      best.sort((a, b) => b.p - a.p || a.id - b.id);
      if (best.length > n) best.pop();
    }
  }
  const p = (x: number) => Math.exp(x - max) / z;
  return { top: best.map((b) => ({ id: b.id, p: p(b.p) })), asked: ask.map((id) => p(logits[id]!)) };
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

type Reply =
  | { ready: true; loadMs: number }
  | { result: Measurement }
  | { probe: ProbeResult }
  | { error: string };
type Request = { cmd: 'run' } | { cmd: 'exit' } | { cmd: 'probe'; request: ProbeRequest };

/**
 * Child side: loads (`load`), warms up with one untimed run of the measured G and prompt and `tokens.warmup` new
 * tokens (kernel selection and arena growth for those shapes), then serves `run` messages (`tokens.measured` new
 * tokens each) until `exit`.
 */
export async function serve(
  load: () => Promise<{
    run: (newTokens: number) => Promise<Omit<Measurement, 'loadAvg'>>;
    /** The agreement check's side (ProbeRequest); absent where the process cannot read logits. */
    probe?: (r: ProbeRequest) => Promise<ProbeResult>;
    dispose: () => Promise<void>;
  }>,
  tokens: { warmup: number; measured: number },
): Promise<void> {
  const send = (m: Reply) => process.send!(m);
  try {
    const t0 = performance.now();
    const { run, probe, dispose } = await load();
    await run(tokens.warmup);
    send({ ready: true, loadMs: performance.now() - t0 });
    const fail = (e: Error) => send({ error: e.stack ?? String(e) });
    const cpu = () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    };
    process.on('message', (msg: Request) => {
      if (msg.cmd === 'exit') {
        void dispose().finally(() => process.exit(0));
        return;
      }
      if (msg.cmd === 'probe') {
        if (!probe) fail(new Error('this process has no agreement check'));
        else probe(msg.request).then((r) => send({ probe: r }), fail);
        return;
      }
      const loadAvg = loadavg()[0]!;
      const c0 = cpu();
      run(tokens.measured).then(
        (r) =>
          send({
            result: { ...r, loadAvg, maxRssMb: process.resourceUsage().maxRSS / 1024, cpuMs: cpu() - c0 },
          }),
        fail,
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
      this.proc.send({ cmd: 'run' } satisfies Request);
    });
  }

  probe(request: ProbeRequest): Promise<ProbeResult> {
    return new Promise((ok, fail) => {
      const died = (code: number | null) =>
        fail(new Error(`the measuring process exited with ${code} mid-probe`));
      this.proc.once('exit', died);
      this.proc.once('message', (m: Reply) => {
        this.proc.off('exit', died);
        if ('probe' in m) ok(m.probe);
        else fail(new Error('error' in m ? m.error : 'unexpected reply'));
      });
      this.proc.send({ cmd: 'probe', request } satisfies Request);
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
