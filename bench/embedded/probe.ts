// Wall-clock spans of the Node side of an embedded run, by category: the handlers' invocations (from the
// runtime's onInvoke), and inside them the policy calls (sampling), policy acquisition (a new version's
// sessions are built there), blob store calls and queue calls, by wrapping the pipeline's own objects.
// Spans overlap (several tool calls at once, a blob read inside a rollout), so a category's time is the union
// of its spans: the wall-clock during which at least one was under way.
import type { EmbeddedPipeline } from '#shared/runtime/embedded';

type Interval = [number, number];

export class Spans {
  private readonly spans = new Map<string, Interval[]>();
  private readonly counts = new Map<string, number>();

  add(category: string, start: number, end: number): void {
    const list = this.spans.get(category) ?? [];
    this.spans.set(category, list);
    list.push([start, end]);
    this.counts.set(category, (this.counts.get(category) ?? 0) + 1);
  }

  count(category: string): number {
    return this.counts.get(category) ?? 0;
  }

  categories(): string[] {
    return [...this.spans.keys()];
  }

  /** Seconds within [from, to] covered by at least one span of the categories. */
  union(categories: readonly string[], from: number, to: number): number {
    const all = categories
      .flatMap((c) => this.spans.get(c) ?? [])
      .map(([a, b]): Interval => [Math.max(a, from), Math.min(b, to)])
      .filter(([a, b]) => b > a)
      .sort((x, y) => x[0] - y[0]);
    let total = 0;
    let cur: Interval | undefined;
    for (const iv of all) {
      if (cur && iv[0] <= cur[1]) cur[1] = Math.max(cur[1], iv[1]);
      else {
        if (cur) total += cur[1] - cur[0];
        cur = [iv[0], iv[1]];
      }
    }
    if (cur) total += cur[1] - cur[0];
    return total / 1000;
  }
}

type AnyFn = (...args: unknown[]) => unknown;

/** Replaces obj[name] by a version that records each call's wall-clock (to its promise's settling). */
function timeAsync(obj: object, names: readonly string[], spans: Spans, category: string): void {
  const o = obj as Record<string, AnyFn>;
  for (const name of names) {
    const orig = o[name];
    if (typeof orig !== 'function') continue;
    o[name] = function (this: unknown, ...args: unknown[]) {
      const t0 = performance.now();
      const out = orig.apply(this, args);
      if (out instanceof Promise) return out.finally(() => spans.add(category, t0, performance.now()));
      spans.add(category, t0, performance.now());
      return out;
    };
  }
}

/** As timeAsync, but only the synchronous part of the call: a long poll's waiting is idle, not work. */
function timeSync(obj: object, names: readonly string[], spans: Spans, category: string): void {
  const o = obj as Record<string, AnyFn>;
  for (const name of names) {
    const orig = o[name];
    if (typeof orig !== 'function') continue;
    o[name] = function (this: unknown, ...args: unknown[]) {
      const t0 = performance.now();
      try {
        return orig.apply(this, args);
      } finally {
        spans.add(category, t0, performance.now());
      }
    };
  }
}

/** Instruments a pipeline before it starts. */
export function instrument(pipeline: EmbeddedPipeline, spans: Spans): void {
  timeAsync(
    pipeline.blobs,
    ['get', 'read', 'head', 'put', 'putIfAbsent', 'putIfMatch', 'list', 'listKeys', 'delete'],
    spans,
    'blob store',
  );
  // The embedded queue does its work (and writes its journal) synchronously inside each call.
  for (const q of [...Object.values(pipeline.queues.queues), ...Object.values(pipeline.queues.dlqs)])
    timeSync(
      q,
      ['send', 'sendBatch', 'receive', 'delete', 'deleteBatch', 'changeVisibility'],
      spans,
      'queues',
    );
  const wrapped = new WeakSet<object>();
  const policies = pipeline.policies as unknown as Record<string, AnyFn>;
  const acquire = policies.acquire!.bind(pipeline.policies);
  policies.acquire = async (...args: unknown[]) => {
    const t0 = performance.now();
    const lease = (await acquire(...args)) as { policy: object; version: number };
    spans.add('policy acquire (new versions load here)', t0, performance.now());
    if (!wrapped.has(lease.policy)) {
      wrapped.add(lease.policy);
      timeAsync(
        lease.policy,
        ['startGroup', 'continueTrajectory', 'continueTrajectories'],
        spans,
        'sampling',
      );
    }
    return lease;
  };
}
