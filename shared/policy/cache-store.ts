// KV caches kept between turns in this process, so a continuation after tool results feeds only the new tokens.
// Bounded by bytes (least recently stored goes first); a miss just means the continuation re-prefills.
import { randomUUID } from 'node:crypto';
import type { KvCache } from './kv-cache.ts';

interface Entry {
  /** The tokens the cache holds, in order. */
  tokens: readonly number[];
  cache: KvCache;
}

export class CacheStore {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(readonly budgetBytes: number) {}

  /** Keeps `cache` (covering `tokens`) and returns its key, or null when it alone exceeds the budget. */
  put(tokens: readonly number[], cache: KvCache): string | null {
    if (cache.batch !== 1 || cache.length !== tokens.length)
      throw new Error(`cache store: a one-row cache of ${tokens.length} tokens expected`);
    if (cache.bytes > this.budgetBytes) return null;
    while (this.bytes + cache.bytes > this.budgetBytes) {
      const oldest = this.entries.keys().next().value as string;
      this.drop(oldest);
    }
    const key = randomUUID();
    this.entries.set(key, { tokens: [...tokens], cache });
    this.bytes += cache.bytes;
    return key;
  }

  /**
   * Removes and returns the cache stored under `key` if its tokens are a prefix of `tokenIds` (a continuation
   * consumes it; its own result is stored anew).
   */
  take(key: string | null, tokenIds: readonly number[]): KvCache | undefined {
    if (key === null) return undefined;
    const e = this.entries.get(key);
    if (!e) return undefined;
    this.drop(key);
    if (e.tokens.length > tokenIds.length) return undefined;
    for (let i = 0; i < e.tokens.length; i++) if (e.tokens[i] !== tokenIds[i]) return undefined;
    return e.cache;
  }

  get size(): number {
    return this.entries.size;
  }

  get heldBytes(): number {
    return this.bytes;
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.cache.bytes;
  }
}
