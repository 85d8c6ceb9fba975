// Fault injection for the embedded pipeline: a queue or a blob store whose chosen method fails the first
// time(s) it is called, as a crashed worker would at that point.
import type { BlobStore } from '#shared/ports/blob-store';
import type { Queue } from '#shared/ports/queue';

export class InjectedCrash extends Error {
  override name = 'InjectedCrash';
}

export interface Injector {
  /** How many times the fault fired. */
  readonly fired: number;
}

/**
 * `target` with `method` throwing InjectedCrash on its first `times` calls for which `when(args)` holds
 * (before doing anything: the call is the crash point). Other methods pass through.
 */
export function failFirst<T extends BlobStore | Queue>(
  target: T,
  method: keyof T & string,
  opts: { times?: number; when?: (args: unknown[]) => boolean } = {},
): T & Injector {
  let fired = 0;
  const times = opts.times ?? 1;
  return new Proxy(target, {
    get(obj, prop, receiver) {
      if (prop === 'fired') return fired;
      const value = Reflect.get(obj, prop, receiver);
      if (typeof value !== 'function') return value;
      if (prop !== method) return value.bind(obj);
      return (...args: unknown[]) => {
        if (fired < times && (opts.when?.(args) ?? true)) {
          fired++;
          return Promise.reject(new InjectedCrash(`injected crash in ${method}`));
        }
        return value.apply(obj, args);
      };
    },
  }) as T & Injector;
}
