// The onnxruntime session options of the decoder and the sampling graph: no spin-waiting thread pools (they
// stalled a loaded 2-core machine, session-options.ts), a checked thread count.
import { describe, expect, it } from 'vitest';
import { SamplerGraph } from '#shared/policy/sampler-graph';
import { cpuSessionOptions } from '#shared/policy/session-options';

describe('cpuSessionOptions', () => {
  it('turns spin-waiting off in both thread pools and keeps the thread count', () => {
    const o = cpuSessionOptions(3);
    expect(o.intraOpNumThreads).toBe(3);
    expect(o.interOpNumThreads).toBe(1);
    expect(o.extra).toEqual({
      session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } },
    });
  });

  it.each([0, -1, 1.5, Number.NaN])('rejects %s threads, naming the value', (n) => {
    expect(() => cpuSessionOptions(n)).toThrow(`onnxruntime threads must be an integer >= 1, got ${n}`);
  });

  it('is accepted by onnxruntime-node (a session is created with it)', async () => {
    const graph = await SamplerGraph.create(300);
    await graph.dispose();
  });
});
