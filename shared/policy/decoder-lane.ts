// A session of the slots graph on a worker thread, so that two decode passes run at once. onnxruntime-node's
// `session.run` computes on the thread that calls it (the main thread, synchronously), so two sessions there take
// turns; measured on 2 cores (SmolLM2-135M int8, 16-48 rows of ~280 cached tokens), two one-thread sessions on two
// threads decoded 1.24-1.46x the rows a second of one two-thread session on the same rows (BENCHMARKS.md, "The
// learner's cores lent to the rollouts while it waits"). Each pass hands the lane its cache buffers (transferred,
// not copied) and gets them back with the outputs.
import { Worker } from 'node:worker_threads';
import type { InferenceSession, Tensor } from 'onnxruntime-node';

const WORKER_URL = new URL('./decoder-lane.worker.mjs', import.meta.url);

/** What crosses to the worker for one input: its data, and whether its buffer is moved there (and back). */
interface WireFeed {
  type: Tensor.Type;
  dims: readonly number[];
  data: Tensor['data'];
  transfer?: boolean;
}

interface Reply {
  id: number;
  outputs?: Record<string, { type: Tensor.Type; dims: readonly number[]; data: Tensor['data'] }>;
  feeds: Record<string, WireFeed>;
  error?: string;
}

export class DecoderLane {
  private next = 0;
  private readonly waiting = new Map<number, (r: Reply) => void>();
  private failure: Error | undefined;

  private constructor(private readonly worker: Worker) {
    worker.on('message', (r: Reply) => {
      this.waiting.get(r.id)?.(r);
      this.waiting.delete(r.id);
    });
    const fail = (err: Error) => {
      this.failure = err;
      for (const [id, done] of this.waiting) done({ id, feeds: {}, error: err.message });
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the decoder lane's worker exited (code ${code})`)));
  }

  /** Starts a worker and loads `modelPath` there with `options`; resolves once it can run. */
  static async start(modelPath: string, options: InferenceSession.SessionOptions): Promise<DecoderLane> {
    const worker = new Worker(WORKER_URL, { workerData: { modelPath, options } });
    worker.unref(); // a run's end never waits for it
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the decoder lane's worker exited (code ${code})`)));
    });
    return new DecoderLane(worker);
  }

  /**
   * Runs `feeds` on the worker's session. The buffers of the inputs named in `moved` are transferred there and
   * back: while the pass runs they are detached here, and `restore(name, data)` hands each one back (a new view of
   * the same memory). Outputs come back as onnxruntime-node returns them (type, dims, data).
   */
  async run(
    feeds: Record<string, Tensor>,
    moved: ReadonlySet<string>,
    restore: (name: string, data: Tensor['data']) => void,
  ): Promise<Record<string, { dims: readonly number[]; data: Tensor['data'] }>> {
    if (this.failure) throw this.failure;
    const wire: Record<string, WireFeed> = {};
    const transfer: ArrayBuffer[] = [];
    for (const [name, t] of Object.entries(feeds)) {
      const data = t.data;
      const move = moved.has(name);
      wire[name] = { type: t.type, dims: t.dims, data, ...(move ? { transfer: true } : {}) };
      if (move && ArrayBuffer.isView(data)) transfer.push(data.buffer as ArrayBuffer);
    }
    const id = this.next++;
    const reply = await new Promise<Reply>((resolve) => {
      this.waiting.set(id, resolve);
      this.worker.postMessage({ id, feeds: wire }, [...new Set(transfer)]);
    });
    for (const [name, f] of Object.entries(reply.feeds)) if (f.transfer) restore(name, f.data);
    if (reply.error !== undefined || !reply.outputs)
      throw new Error(`decoder lane: ${reply.error ?? 'no outputs'}`);
    return reply.outputs;
  }

  async close(): Promise<void> {
    this.failure ??= new Error('the decoder lane is closed');
    await this.worker.terminate();
  }
}
