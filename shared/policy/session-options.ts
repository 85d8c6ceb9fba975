// onnxruntime CPU session options shared by the decoder and the sampling graph.
//
// Thread pools never spin: onnxruntime's default lets each intra-op worker busy-wait for the next parallel
// section. On a machine whose cores are shared (other rollout workers, the learner, two sessions in one process,
// the JS thread drawing tokens) a spinning worker holds a core that the thread it waits for needs. Measured on
// the 2-core benchmark machine under load (Qwen2.5-0.5B-shaped int4 bundle, BENCHMARKS.md "Rollout engine"):
// a 128-token prefill took 1242-1424 ms with 2 spinning threads and 835-850 ms with spinning off, a batch-1
// decode step 49-65 ms vs 31-35 ms; the wake-up that spinning saves is microseconds per operator.
import type { InferenceSession } from 'onnxruntime-node';

/** CPU session options with `threads` intra-op threads, no inter-op parallelism and no spin-waiting. */
export function cpuSessionOptions(threads: number): InferenceSession.SessionOptions {
  if (!(Number.isInteger(threads) && threads >= 1))
    throw new RangeError(`onnxruntime threads must be an integer >= 1, got ${threads}`);
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    // Session config entries (onnxruntime_session_options_config_keys.h); the node binding joins the keys with dots.
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  };
}
