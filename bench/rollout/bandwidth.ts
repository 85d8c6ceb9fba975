// Memory copy bandwidth measured in the same run as the decode benchmark: threads copy disjoint slices of a
// SharedArrayBuffer, and bandwidth counts bytes read plus bytes written (STREAM's "copy" convention).
import { Worker } from 'node:worker_threads';

const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { src, dst, from, to } = workerData;
const a = new Float64Array(src, from * 8, to - from);
const b = new Float64Array(dst, from * 8, to - from);
parentPort.on('message', () => { b.set(a); parentPort.postMessage(0); });
`;

/** Copies larger than this measure main memory just as well (caches are tens of MB) without holding 2x the weights. */
const MAX_BYTES = 256 << 20;

/** Best bytes moved per second (read + write) over `repeats` copies of min(`bytes`, 256 MiB) split over `threads`. */
export async function copyBandwidth(bytes: number, threads: number, repeats = 5): Promise<number> {
  const n = Math.floor(Math.min(bytes, MAX_BYTES) / 8);
  const src = new SharedArrayBuffer(n * 8);
  const dst = new SharedArrayBuffer(n * 8);
  new Float64Array(src).fill(1.5);
  new Float64Array(dst).fill(0); // touch every page before timing
  const workers = Array.from({ length: threads }, (_, i) => {
    const from = Math.floor((n * i) / threads);
    const to = Math.floor((n * (i + 1)) / threads);
    return new Worker(WORKER, { eval: true, workerData: { src, dst, from, to } });
  });
  const copyOnce = (w: Worker) =>
    new Promise<void>((ok) => {
      w.once('message', () => ok());
      w.postMessage(0);
    });
  const once = () => Promise.all(workers.map(copyOnce));
  try {
    await once(); // warm-up
    let best = Number.POSITIVE_INFINITY;
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      await once();
      best = Math.min(best, performance.now() - t0);
    }
    return (2 * n * 8) / (best / 1000);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
