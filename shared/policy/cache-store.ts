// KV caches kept between turns in this process, so a continuation after tool results feeds only the new tokens.
// Bounded by bytes (least recently stored goes first); a miss means the continuation re-prefills. One store serves
// every loaded version of a process (shared/pipeline/policies.ts), each entry tagged with the version whose weights
// computed it: a version unloaded and loaded again between a trajectory's turns still finds its caches, so whether
// a turn re-prefills does not depend on when sessions come and go (a re-prefill rounds differently from decoding
// on the kept cache, and near a tie a token could flip).
import { randomUUID } from 'node:crypto';
import { boundRowPool, type KvCache, recycleRow } from './kv-cache.ts';

interface Entry {
  /** The tokens the cache holds, in order. */
  tokens: readonly number[];
  cache: KvCache;
  /** Whose cache it is (the policy version that computed it); only that owner takes it. */
  owner: string;
}

/** What a store has done since it was made (CacheStore.stats). */
export interface CacheStats {
  kept: number;
  pushedOut: number;
  found: number;
  lost: number;
  /** Dropped because their trajectory ended (nothing will continue them). */
  freed: number;
}

/** Bytes of KV cache a process keeps between turns unless told otherwise. */
export const DEFAULT_CACHE_BYTES = 2 ** 30;

export class CacheStore {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;
  private readonly counts: CacheStats = { kept: 0, pushedOut: 0, found: 0, lost: 0, freed: 0 };

  constructor(readonly budgetBytes: number) {
    boundRowPool(budgetBytes);
  }

  /**
   * Since this store was made: caches kept, kept ones pushed out by newer ones (or too big to keep), takes that
   * found their cache or did not (a continuation that re-prefills, or rebuilds pass by pass in a deterministic run),
   * and caches freed when their trajectory ended.
   */
  get stats(): CacheStats {
    return { ...this.counts };
  }

  /** Keeps `cache` (covering `tokens`) and returns its key, or null when it alone exceeds the budget. */
  put(tokens: readonly number[], cache: KvCache, owner = ''): string | null {
    if (cache.batch !== 1 || cache.length !== tokens.length)
      throw new Error(`cache store: a one-row cache of ${tokens.length} tokens expected`);
    if (cache.bytes > this.budgetBytes) {
      this.counts.pushedOut++;
      return null;
    }
    while (this.bytes + cache.bytes > this.budgetBytes) {
      const oldest = this.entries.keys().next().value as string;
      this.drop(oldest);
      this.counts.pushedOut++;
    }
    this.counts.kept++;
    const key = randomUUID();
    this.entries.set(key, { tokens: [...tokens], cache, owner });
    this.bytes += cache.bytes;
    return key;
  }

  /**
   * Removes and returns the cache stored under `key` if `owner` stored it and its tokens are a prefix of `tokenIds`
   * (a continuation consumes it; its own result is stored anew; the taker gives its arrays back with recycleRow
   * when done with it). Another owner's entry stays where it is.
   */
  take(key: string | null, tokenIds: readonly number[], owner = ''): KvCache | undefined {
    if (key === null) return undefined;
    const e = this.entries.get(key);
    if (!e || e.owner !== owner) {
      this.counts.lost++;
      return undefined;
    }
    this.drop(key, false);
    const matches = e.tokens.length <= tokenIds.length && e.tokens.every((t, i) => t === tokenIds[i]);
    this.counts[matches ? 'found' : 'lost']++;
    if (!matches) recycleRow(e.cache);
    return matches ? e.cache : undefined;
  }

  /**
   * Drops the cache stored under `key` by `owner`, whose trajectory has ended: it would otherwise hold its bytes
   * until newer caches push it out, and push out live ones first when the budget is tight.
   */
  free(key: string | null, owner = ''): void {
    if (key === null || this.entries.get(key)?.owner !== owner) return;
    this.drop(key);
    this.counts.freed++;
  }

  get size(): number {
    return this.entries.size;
  }

  get heldBytes(): number {
    return this.bytes;
  }

  /** Forgets `key`'s entry; its cache's arrays go back to the row pool unless a taker reads them (`recycle` false). */
  private drop(key: string, recycle = true): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.bytes -= e.cache.bytes;
    if (recycle) recycleRow(e.cache);
  }
}
