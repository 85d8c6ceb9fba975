// A second decoder lane on its own thread (shared/policy/decoder-lane.ts): onnxruntime-node runs a session
// synchronously on the thread that calls it, so two sessions on the main thread take turns; this one runs beside it.
// Plain JS: Node workers cannot load TypeScript without a loader. The cache buffers arrive transferred (not copied)
// and go back with the outputs.
import { parentPort, workerData } from 'node:worker_threads';
import ort from 'onnxruntime-node';

const session = await ort.InferenceSession.create(workerData.modelPath, workerData.options);
parentPort.postMessage({ ready: true });

parentPort.on('message', async ({ id, feeds }) => {
  try {
    const tensors = {};
    for (const [name, f] of Object.entries(feeds)) tensors[name] = new ort.Tensor(f.type, f.data, f.dims);
    const out = await session.run(tensors);
    const outputs = {};
    const transfer = [];
    for (const [name, t] of Object.entries(out)) {
      outputs[name] = { type: t.type, dims: t.dims, data: t.data };
      transfer.push(t.data.buffer);
    }
    // The inputs' buffers go back too, so the caller's cache is whole again.
    for (const f of Object.values(feeds)) if (f.transfer) transfer.push(f.data.buffer);
    parentPort.postMessage({ id, outputs, feeds }, [...new Set(transfer)]);
  } catch (err) {
    const transfer = Object.values(feeds)
      .filter((f) => f.transfer)
      .map((f) => f.data.buffer);
    parentPort.postMessage({ id, error: String(err?.message ?? err), feeds }, [...new Set(transfer)]);
  }
});
