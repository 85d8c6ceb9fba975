// Policies for the rollout stage: the newest version a run has published (re-read when LATEST.json moves)
// or a pinned one (validation), loaded once per process and shared by concurrent rollouts. Bundles are used
// in place in a local folder store, and copied to the scratch folder (/tmp on Lambda) from a remote one.

import { createWriteStream, existsSync } from 'node:fs';
import { copyFile, link, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type CacheStats, CacheStore, DEFAULT_CACHE_BYTES } from '#shared/policy/cache-store';
import { addStats, emptyStats, type LoopStats } from '#shared/policy/decode-loop';
import type { LoadPolicyOptions, Policy, PolicyParts } from '#shared/policy/policy';
import type { SpareCores } from '#shared/policy/slot-decoder';
import type { BlobStore } from '#shared/ports/blob-store';
import { BundleManifestSchema, PolicyPointerSchema } from '#shared/schemas/policy';
import { keys } from '#shared/topology';
import { readJson } from './blob-json.ts';
import { readRunStatus } from './run-status.ts';

const MANIFEST = 'manifest.json';

/** What the rollout stage uses of a loaded policy (shared/policy's Policy; a stub in bench/pipeline). */
export type RolloutPolicy = Pick<
  Policy,
  'startGroup' | 'continueTrajectory' | 'endTrajectory' | 'dispose'
> & {
  readonly tokenizer: Pick<Policy['tokenizer'], 'render' | 'encode'>;
};

export interface PolicyLease {
  readonly policy: RolloutPolicy;
  readonly version: number;
  release(): void;
}

/** How current the newest version must be (unpinned acquires only). */
export interface Freshness {
  /** Read LATEST.json now rather than trust a recent read: a group's first turn, whose version the learner's
   * staleness check judges the group by. */
  readonly fresh?: boolean;
  /** Re-read LATEST.json if the last read is older than this version: a trajectory's next turn is never
   * sampled by an older policy than its last turn, even in another process whose last read is older. */
  readonly atLeast?: number;
}

export interface PolicyProvider {
  /** The newest published version (pinned = null) or exactly `pinned`. Release the lease when done. */
  acquire(runId: string, pinned: number | null, freshness?: Freshness): Promise<PolicyLease>;
  close(): Promise<void>;
  /**
   * Where the rollout engine's time went in this process so far, over every version it loaded: prompt and
   * continuation prefills, batched decode passes and sampling (LoopStats). Absent where nothing is counted.
   */
  engineStats?(): LoopStats | undefined;
}

export class NoPolicyError extends Error {
  override name = 'NoPolicyError';
}

interface Entry {
  readonly policy: Promise<Policy>;
  refs: number;
  lastUsed: number;
}

export interface BlobPolicyProviderOptions {
  readonly scratchDir: string;
  /** ORT threads per session. */
  readonly threads?: number;
  /** More threads for a pass while other cores are idle (the embedded learner waiting: slot-decoder.ts). */
  readonly spare?: SpareCores;
  /**
   * Bytes of KV cache kept between a trajectory's turns, for all versions together (default DEFAULT_CACHE_BYTES).
   * A continuation whose cache was pushed out re-prefills, or in a deterministic run rebuilds it pass by pass.
   */
  readonly cacheBytes?: number;
  /** Idle versions kept loaded besides the newest (validation often pins the previous one). */
  readonly keepIdle?: number;
  /**
   * How long a read of LATEST.json answers later acquires (default 1000 ms). Every turn of every trajectory
   * acquires the newest policy; re-reading the pointer for each continuation was a request per turn, whereas a
   * learner step takes seconds at the least. Group starts always read it (see Freshness).
   */
  readonly latestTtlMs?: number;
  readonly load?: (dir: string, opts: LoadPolicyOptions) => Promise<Policy>;
}

export class BlobPolicyProvider implements PolicyProvider {
  private readonly entries = new Map<string, Entry>();
  /** Policies loaded and not yet disposed, and the engine counters of those disposed (engineStats). */
  private readonly loaded = new Set<Policy>();
  private readonly disposedStats: LoopStats = emptyStats();
  private readonly newest = new Map<string, number>();
  private readonly latest = new Map<string, { version: Promise<number>; at: number }>();
  /** Tokenizers and sampling graphs shared by the versions whose tokenizer files are the same (by digest). */
  private readonly parts = new Map<string, Promise<PolicyParts>>();
  /** Files downloaded for a run's versions, by run and sha256: a later version links the ones it shares. */
  private readonly downloaded = new Map<string, string>();
  /** Scratch folders of the versions this provider downloaded, by `runId:version`; removed when it unloads them. */
  private readonly scratch = new Map<string, string>();
  /** Removals of scratch folders under way: a load of the same version waits for its folder's removal. */
  private readonly removing = new Map<string, Promise<void>>();
  /** KV caches kept between turns, for every version this provider loads (an unloaded version's survive it). */
  private readonly caches: CacheStore;

  constructor(
    private readonly blobs: BlobStore,
    private readonly opts: BlobPolicyProviderOptions,
  ) {
    this.caches = new CacheStore(opts.cacheBytes ?? DEFAULT_CACHE_BYTES);
  }

  async acquire(runId: string, pinned: number | null, freshness: Freshness = {}): Promise<PolicyLease> {
    let version = pinned;
    if (version === null) {
      version = await this.latestVersion(runId, freshness.fresh ?? false);
      if (version < (freshness.atLeast ?? 0)) version = await this.latestVersion(runId, true);
      this.newest.set(runId, Math.max(version, this.newest.get(runId) ?? 0));
    }
    const id = `${runId}:${version}`;
    let entry = this.entries.get(id);
    if (!entry) {
      entry = { policy: this.load(runId, version), refs: 0, lastUsed: 0 };
      this.entries.set(id, entry);
      entry.policy.catch(() => this.entries.delete(id));
    }
    entry.refs++;
    entry.lastUsed = Date.now();
    const held = entry;
    let policy: RolloutPolicy;
    try {
      policy = await held.policy;
    } catch (err) {
      held.refs--;
      throw err;
    }
    let released = false;
    return {
      policy,
      version,
      release: () => {
        if (released) return;
        released = true;
        held.refs--;
        void this.evict();
      },
    };
  }

  /** The run's newest version: LATEST.json, read at most once per `latestTtlMs` unless `fresh` (callers share a read). */
  private latestVersion(runId: string, fresh: boolean): Promise<number> {
    const ttl = this.opts.latestTtlMs ?? 1000;
    const hit = this.latest.get(runId);
    if (!fresh && hit && performance.now() - hit.at < ttl) return hit.version;
    const version = readJson(this.blobs, keys.policyLatest(runId), PolicyPointerSchema).then((p) => {
      if (!p) throw new NoPolicyError(`run ${runId} has not published a policy yet`);
      return p.value.version;
    });
    const entry = { version, at: performance.now() };
    this.latest.set(runId, entry);
    version.catch(() => {
      if (this.latest.get(runId) === entry) this.latest.delete(runId);
    });
    return version;
  }

  /**
   * The KV cache kept between turns: its budget, what it kept, pushed out, found, lost and freed (CacheStore.stats),
   * and how many caches it holds now.
   */
  cacheStats(): CacheStats & { budgetBytes: number; held: number } {
    return { budgetBytes: this.caches.budgetBytes, ...this.caches.stats, held: this.caches.size };
  }

  engineStats(): LoopStats {
    const total = addStats(emptyStats(), this.disposedStats);
    for (const p of this.loaded) if (p.metrics) addStats(total, p.metrics);
    return total;
  }

  /** Disposes a version's policy, keeping its engine counters for engineStats(). */
  private async disposePolicy(policy: Promise<Policy>): Promise<void> {
    const p = await policy;
    if (this.loaded.delete(p) && p.metrics) addStats(this.disposedStats, p.metrics);
    await p.dispose();
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.allSettled(all.map((e) => this.disposePolicy(e.policy)));
    const parts = [...this.parts.values()];
    this.parts.clear();
    await Promise.allSettled(parts.map(async (p) => (await p).dispose()));
  }

  /** A new version builds only its decoder session: the tokenizer and sampling graph come from an earlier one. */
  private async load(runId: string, version: number): Promise<Policy> {
    const dir = await this.bundleDir(runId, version);
    // The run's model.chat_template (its text, in run.json) replaces the bundle's.
    const chatTemplate = (await readRunStatus(this.blobs, runId))?.config?.model.chat_template;
    const opts: LoadPolicyOptions = {
      version,
      caches: this.caches,
      ...(this.opts.threads ? { threads: this.opts.threads } : {}),
      ...(this.opts.spare ? { spare: this.opts.spare } : {}),
      ...(chatTemplate !== undefined ? { chatTemplate } : {}),
    };
    const policy = await (this.opts.load
      ? this.opts.load(dir, opts)
      : this.loadEngine(dir, opts, chatTemplate));
    this.loaded.add(policy);
    return policy;
  }

  private async loadEngine(
    dir: string,
    opts: LoadPolicyOptions,
    chatTemplate: string | undefined,
  ): Promise<Policy> {
    const engine = await import('#shared/policy/policy');
    const { readBundle } = await import('#shared/policy/bundle');
    // The tokenizer carries the template, so versions share parts only under the same one.
    const key = `${engine.policyPartsKey((await readBundle(dir)).manifest)}|${chatTemplate ?? ''}`;
    let parts = this.parts.get(key);
    if (!parts) {
      parts = engine.loadPolicyParts(dir, opts);
      this.parts.set(key, parts);
      parts.catch(() => this.parts.delete(key));
    }
    return engine.loadPolicy(dir, { ...opts, parts: await parts });
  }

  /**
   * The version's bundle in a local folder: where it is (a folder store), or downloaded to scratch. Its manifest
   * lists every file, and where each is stored: a version in a bucket uploads only what changed (the weights) and
   * names the version whose folder holds the rest. A file whose sha256 is one already downloaded for the run is
   * linked, not fetched again, and the rest are fetched at once: a version's download is on the critical path of
   * every deterministic step.
   */
  private async bundleDir(runId: string, version: number): Promise<string> {
    const prefix = keys.policyVersion(runId, version);
    const local = this.blobs.localPath?.(prefix);
    if (local && existsSync(local)) return local;
    const dir = join(this.opts.scratchDir, runId, 'policy', `v${version}`);
    await this.removing.get(dir);
    this.scratch.set(`${runId}:${version}`, dir);
    const done = join(dir, '.complete');
    if (existsSync(done)) return dir;
    // The manifest is written last: without it the version is not (yet) complete.
    const raw = await this.blobs.get(`${prefix}${MANIFEST}`);
    if (!raw) throw new NoPolicyError(`policy ${prefix} not found (no ${MANIFEST})`);
    const manifest = BundleManifestSchema.parse(JSON.parse(Buffer.from(raw).toString('utf8')));
    await mkdir(dir, { recursive: true });
    await Promise.all(
      Object.entries(manifest.files).map(async ([name, { sha256, version: storedIn }]) => {
        const path = join(dir, name);
        await mkdir(dirname(path), { recursive: true });
        const have = this.downloaded.get(`${runId}|${sha256}`);
        if (have && existsSync(have)) {
          await rm(`${path}.part`, { force: true });
          await link(have, `${path}.part`).catch(() => copyFile(have, `${path}.part`));
        } else {
          const key = `${keys.policyVersion(runId, storedIn ?? version)}${name}`;
          const stream = await this.blobs.getStream(key);
          if (!stream) throw new Error(`${key}, listed in ${prefix}${MANIFEST}, is missing`);
          await pipeline(stream, createWriteStream(`${path}.part`));
        }
        await rename(`${path}.part`, path);
        this.downloaded.set(`${runId}|${sha256}`, path);
      }),
    );
    await writeFile(join(dir, MANIFEST), raw);
    await writeFile(done, '');
    return dir;
  }

  /**
   * Disposes idle sessions of versions older than the newest, keeping the most recently used few, and removes the
   * scratch copies of the versions it disposes: a run publishes a version every step, and a real model's is hundreds
   * of megabytes (Lambda's /tmp holds a few). A file the next version shares is a hard link in its own folder, and the
   * provider's record of downloaded files points at the newest copy, so removing an older folder loses nothing.
   */
  private async evict(): Promise<void> {
    const idle = [...this.entries.entries()]
      .filter(([id, e]) => {
        const [runId, v] = id.split(':') as [string, string];
        return e.refs === 0 && Number(v) !== this.newest.get(runId);
      })
      .sort((a, b) => b[1].lastUsed - a[1].lastUsed);
    for (const [id, e] of idle.slice(this.opts.keepIdle ?? 1)) {
      this.entries.delete(id);
      this.disposePolicy(e.policy).catch(() => {});
      const dir = this.scratch.get(id);
      if (dir === undefined || this.entries.has(id)) continue;
      this.scratch.delete(id);
      const removal = rm(dir, { recursive: true, force: true })
        .catch(() => {})
        .finally(() => this.removing.delete(dir));
      this.removing.set(dir, removal);
      for (const [file, path] of this.downloaded)
        if (path.startsWith(`${dir}/`)) this.downloaded.delete(file);
      await removal;
    }
  }
}
