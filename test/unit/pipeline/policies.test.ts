// The rollout stage's policy provider: which version an acquire gets, and how often it reads LATEST.json.
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { BlobPolicyProvider } from '#shared/pipeline/policies';
import { readBundle } from '#shared/policy/bundle';
import { emptyStats } from '#shared/policy/decode-loop';
import type { Policy } from '#shared/policy/policy';
import { BundleManifestSchema } from '#shared/schemas/policy';
import { keys } from '#shared/topology';
import { tinyBundle } from '../../../bench/support/tiny-model.ts';
import { tempDirs } from '../../helpers/temp-dirs.ts';

const RUN = 'r-1';

const tempDir = tempDirs();

function setup(latestTtlMs?: number) {
  const blobs = new FolderBlobStore(tempDir('toolrl-policies-'));
  let reads = 0;
  const counting = new Proxy(blobs, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver);
      if (prop === 'read')
        return (key: string) => {
          if (key === keys.policyLatest(RUN)) reads++;
          return obj.read(key);
        };
      return typeof value === 'function' ? value.bind(obj) : value;
    },
  });
  const loaded: number[] = [];
  const provider = new BlobPolicyProvider(counting, {
    scratchDir: join(blobs.root, 'scratch'),
    ...(latestTtlMs !== undefined ? { latestTtlMs } : {}),
    // Stands in for onnxruntime: the provider's job is which bundle, not how it is run.
    load: async (_dir, opts) => {
      loaded.push(opts.version!);
      // Engine counters that differ per version: v sampled 10 * (v + 1) prefill tokens, and so on.
      const k = opts.version! + 1;
      const metrics = {
        prefillTokens: 10 * k,
        prefillMs: k,
        decodeSteps: 2 * k,
        decodeTokens: 5 * k,
        decodeMs: k,
        sampleMs: k,
      };
      return { metrics, dispose: async () => {} } as unknown as Policy;
    },
  });
  const publish = async (v: number) => {
    mkdirSync(blobs.localPath(keys.policyVersion(RUN, v)), { recursive: true });
    await blobs.put(
      keys.policyLatest(RUN),
      JSON.stringify({ version: v, prefix: keys.policyVersion(RUN, v), sha256: '0'.repeat(64) }),
    );
  };
  const version = async (f?: Parameters<BlobPolicyProvider['acquire']>[2]) => {
    const lease = await provider.acquire(RUN, null, f);
    lease.release();
    return lease.version;
  };
  return { provider, publish, version, reads: () => reads, loaded };
}

/**
 * A bucket (a folder store without local paths) holding v0 of a tiny bundle whole and the given later versions as the
 * learner publishes them there: each one's weights file, and a manifest naming v0's folder for every other file.
 */
async function bucketWithVersions(later: number[]) {
  const { bundleDir } = await tinyBundle();
  const folder = new FolderBlobStore(tempDir('toolrl-policies-remote-'));
  const bucket = new Proxy(folder, {
    get(obj, prop, receiver) {
      if (prop === 'localPath') return undefined;
      const value = Reflect.get(obj, prop, receiver);
      return typeof value === 'function' ? value.bind(obj) : value;
    },
  });
  const manifest = BundleManifestSchema.parse(
    JSON.parse(readFileSync(join(bundleDir, 'manifest.json'), 'utf8')),
  );
  for (const name of [...Object.keys(manifest.files), 'manifest.json'])
    await folder.put(`${keys.policyVersion(RUN, 0)}${name}`, readFileSync(join(bundleDir, name)));
  const files = Object.fromEntries(
    Object.entries(manifest.files).map(([n, e]) => [n, n === 'model.onnx.data' ? e : { ...e, version: 0 }]),
  );
  for (const v of later) {
    await folder.put(
      `${keys.policyVersion(RUN, v)}model.onnx.data`,
      readFileSync(join(bundleDir, 'model.onnx.data')),
    );
    await folder.put(
      `${keys.policyVersion(RUN, v)}manifest.json`,
      JSON.stringify({ ...manifest, version: v, files }),
    );
  }
  return { folder, bucket, manifest };
}

describe('BlobPolicyProvider', () => {
  it('hands every version one KV cache store of the budget it was given (1 GiB unless told)', async () => {
    const budgets = async (cacheBytes?: number) => {
      const blobs = new FolderBlobStore(tempDir('toolrl-policies-'));
      const stores: unknown[] = [];
      const provider = new BlobPolicyProvider(blobs, {
        scratchDir: join(blobs.root, 'scratch'),
        ...(cacheBytes !== undefined ? { cacheBytes } : {}),
        load: async (_dir, opts) => {
          stores.push(opts.caches);
          return { dispose: async () => {} } as unknown as Policy;
        },
      });
      for (const v of [0, 1]) {
        mkdirSync(blobs.localPath(keys.policyVersion(RUN, v)), { recursive: true });
        (await provider.acquire(RUN, v)).release();
      }
      expect(stores[0]).toBe(stores[1]);
      return (stores[0] as { budgetBytes: number }).budgetBytes;
    };
    expect(await budgets()).toBe(2 ** 30);
    expect(await budgets(3 * 2 ** 30)).toBe(3 * 2 ** 30);
  });

  it('reads LATEST.json once per TTL for continuations, and on every group start', async () => {
    const p = setup(60_000);
    await p.publish(0);
    expect([await p.version(), await p.version(), await p.version()]).toEqual([0, 0, 0]);
    expect(p.reads()).toBe(1);
    await p.publish(1);
    // A continuation within the TTL keeps the version it read; a group start reads the pointer.
    expect(await p.version()).toBe(0);
    expect(await p.version({ fresh: true })).toBe(1);
    expect(p.reads()).toBe(2);
    expect(await p.version()).toBe(1); // the fresh read also serves later continuations
    expect(p.reads()).toBe(2);
    await p.provider.close();
  });

  it('never gives a continuation an older version than its last turn, re-reading when its read is older', async () => {
    const p = setup(60_000);
    await p.publish(2);
    expect(await p.version()).toBe(2);
    await p.publish(3);
    // Another process sampled the previous turn with v3; this one last read v2.
    expect(await p.version({ atLeast: 3 })).toBe(3);
    expect(p.reads()).toBe(2);
    expect(await p.version({ atLeast: 3 })).toBe(3);
    expect(p.reads()).toBe(2);
    await p.provider.close();
  });

  it('with a zero TTL reads the pointer on every acquire, and loads each version once', async () => {
    const p = setup(0);
    await p.publish(0);
    await p.version();
    await p.publish(1);
    expect(await p.version()).toBe(1);
    expect(await p.version()).toBe(1);
    expect(p.reads()).toBe(3);
    expect(p.loaded).toEqual([0, 1]);
    await p.provider.close();
  });

  it('counts the rollout engine over every version it loaded, those unloaded and those still held, once each', async () => {
    const p = setup(0);
    expect(p.provider.engineStats()).toEqual(emptyStats());
    for (const v of [0, 1, 2]) {
      await p.publish(v);
      await p.version(); // loads v; an idle older one beyond the newest and the last used is unloaded
    }
    const all = {
      prefillTokens: 60,
      prefillMs: 6,
      decodeSteps: 12,
      decodeTokens: 30,
      decodeMs: 6,
      sampleMs: 6,
    };
    expect(p.provider.engineStats()).toEqual(all);
    await p.provider.close(); // every version unloaded now: the same totals, not counted twice
    expect(p.provider.engineStats()).toEqual(all);
  });

  it('a run with no LATEST.json yet is a NoPolicyError, and the next acquire tries again', async () => {
    const p = setup(60_000);
    await expect(p.version()).rejects.toThrow(/has not published a policy yet/);
    await p.publish(0);
    expect(await p.version()).toBe(0);
    await p.provider.close();
  });

  it('loads a complete bundle of a version that uploaded only its weights, fetching the rest where it names', async () => {
    // GIVEN a bucket (no local paths) with v0 whole, and v1 as the learner publishes it there: its weights file and
    // a manifest that names v0's folder for every other file
    const { folder, bucket, manifest } = await bucketWithVersions([1]);
    const fetched: string[] = [];
    const getStream = folder.getStream.bind(folder);
    folder.getStream = (key: string) => {
      fetched.push(key);
      return getStream(key);
    };
    const checked: string[] = [];
    const provider = new BlobPolicyProvider(bucket, {
      scratchDir: tempDir('toolrl-policies-scratch-'),
      // The bundle reader checks every listed file is there with its digest; the session is not the point here.
      load: async (dir) => {
        await readBundle(dir, 'sha256');
        checked.push(dir);
        return { dispose: async () => {} } as unknown as Policy;
      },
    });
    // WHEN v1 is acquired by a process that has no earlier version
    const lease = await provider.acquire(RUN, 1);
    lease.release();
    // THEN its folder is a complete bundle: the weights from v1, everything else from v0
    expect(checked).toHaveLength(1);
    expect(fetched.sort()).toEqual(
      Object.keys(manifest.files)
        .map((n) => `${keys.policyVersion(RUN, n === 'model.onnx.data' ? 1 : 0)}${n}`)
        .sort(),
    );
    await provider.close();
  });

  it('removes the scratch copy of a version it unloads, and fetches it again if it is asked for later', async () => {
    // GIVEN a bucket holding v0 whole and v1, v2 as the learner publishes them there (weights only, the rest named in v0)
    const { folder, bucket } = await bucketWithVersions([1, 2]);
    const scratchDir = tempDir('toolrl-policies-scratch-');
    const versionsInScratch = () => readdirSync(join(scratchDir, RUN, 'policy')).sort();
    const provider = new BlobPolicyProvider(bucket, {
      scratchDir,
      keepIdle: 0,
      load: async (dir) => {
        await readBundle(dir, 'sha256'); // every listed file there, with its digest
        return { dispose: async () => {} } as unknown as Policy;
      },
    });
    const use = async (v: number) => {
      await folder.put(
        keys.policyLatest(RUN),
        JSON.stringify({ version: v, prefix: keys.policyVersion(RUN, v), sha256: '0'.repeat(64) }),
      );
      const lease = await provider.acquire(RUN, null, { fresh: true });
      lease.release();
      await new Promise((r) => setTimeout(r, 0));
    };
    // WHEN the versions are used one after another, as a run's rollouts use them
    await use(0);
    await use(1);
    await use(2);
    // THEN only the newest version's copy is left, and it is whole (its shared files were linked before v0, v1 went)
    await expect.poll(versionsInScratch).toEqual(['v2']);
    await readBundle(join(scratchDir, RUN, 'policy', 'v2'), 'sha256');
    // AND a validation pinned to v1 later fetches it again, whole, and leaves v2's copy alone
    const pinned = await provider.acquire(RUN, 1);
    pinned.release();
    expect(existsSync(join(scratchDir, RUN, 'policy', 'v2', '.complete'))).toBe(true);
    await provider.close();
  });
});
