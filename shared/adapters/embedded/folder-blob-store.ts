// The embedded BlobStore: a local folder where a key is a relative path. Writes go to a temp file and are
// renamed into place, so readers (including the Python learner) never see a partial object.
import { createReadStream } from 'node:fs';
import { link, mkdir, readdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import type { Readable } from 'node:stream';
import {
  assertValidKey,
  type BlobInfo,
  type BlobStore,
  type Body,
  type ConditionalPut,
} from '../../ports/blob-store.ts';

const TMP_PREFIX = '.tmp-';
let tmpCounter = 0;

/** Notified after every successful write (the runtime turns matching keys into S3-style events). */
export type PutListener = (key: string, info: BlobInfo) => void;

export class FolderBlobStore implements BlobStore {
  readonly describe: string;
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly listeners: PutListener[] = [];

  constructor(readonly root: string) {
    this.describe = `file://${root}`;
  }

  /** Registers a listener for writes made through this store (not for files other processes write). */
  onPut(listener: PutListener): () => void {
    this.listeners.push(listener);
    return () => {
      const i = this.listeners.indexOf(listener);
      if (i >= 0) this.listeners.splice(i, 1);
    };
  }

  localPath(key: string): string {
    assertValidKey(key);
    return join(this.root, ...key.split('/'));
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.localPath(key));
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async getStream(key: string): Promise<Readable | undefined> {
    const path = this.localPath(key);
    if (!(await this.head(key))) return undefined;
    return createReadStream(path);
  }

  async head(key: string): Promise<BlobInfo | undefined> {
    try {
      const s = await stat(this.localPath(key), { bigint: true });
      if (!s.isFile()) return undefined;
      return infoOf(key, s);
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async put(key: string, body: Body): Promise<{ etag: string }> {
    const path = this.localPath(key);
    const tmp = await this.writeTemp(path, body);
    await rename(tmp, path);
    return { etag: (await this.announce(key)).etag };
  }

  async putIfAbsent(key: string, body: Body): Promise<ConditionalPut> {
    const path = this.localPath(key);
    const tmp = await this.writeTemp(path, body);
    try {
      // link(2) fails with EEXIST when the target exists: atomic across processes, and the object appears
      // complete because the temp file was fully written first.
      await link(tmp, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { written: false };
      throw err;
    } finally {
      await unlink(tmp).catch(() => {});
    }
    return { written: true, etag: (await this.announce(key)).etag };
  }

  /**
   * Compare-and-swap on the etag. Serialised per key inside this process; the pipeline is the only writer of
   * the keys it updates this way (run.json, feeder state), so no cross-process lock is needed.
   */
  async putIfMatch(key: string, body: Body, etag: string): Promise<ConditionalPut> {
    return this.withLock(key, async () => {
      const current = await this.head(key);
      if (!current || current.etag !== etag) return { written: false } as const;
      const { etag: next } = await this.put(key, body);
      return { written: true, etag: next } as const;
    });
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    // Walk only the deepest directory the prefix names; the remainder is a file-name prefix.
    const slash = prefix.lastIndexOf('/');
    const dirKey = slash >= 0 ? prefix.slice(0, slash) : '';
    if (dirKey) assertValidKey(dirKey);
    const out: BlobInfo[] = [];
    await this.walk(dirKey, prefix, out);
    out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return out;
  }

  async delete(key: string): Promise<void> {
    await rm(this.localPath(key), { force: true });
  }

  private async walk(dirKey: string, prefix: string, out: BlobInfo[]): Promise<void> {
    const dir = dirKey ? join(this.root, ...dirKey.split('/')) : this.root;
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return;
      throw err;
    }
    for (const e of entries) {
      if (e.name.startsWith(TMP_PREFIX)) continue;
      const key = dirKey ? `${dirKey}/${e.name}` : e.name;
      if (e.isDirectory()) {
        // Descend when the directory can contain keys with the prefix.
        if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) await this.walk(key, prefix, out);
      } else if (e.isFile() && key.startsWith(prefix)) {
        const info = await this.head(key);
        if (info) out.push(info);
      }
    }
  }

  private async writeTemp(path: string, body: Body): Promise<string> {
    const dir = dirname(path);
    await mkdir(dir, { recursive: true });
    const tmp = `${dir}${sep}${TMP_PREFIX}${process.pid}-${++tmpCounter}`;
    await writeFile(tmp, body);
    return tmp;
  }

  private async announce(key: string): Promise<BlobInfo> {
    const info = await this.head(key);
    if (!info) throw new Error(`object ${key} vanished right after it was written`);
    for (const l of this.listeners) l(key, info);
    return info;
  }

  private async withLock<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const tail = run.catch(() => {});
    this.locks.set(key, tail);
    try {
      return await run;
    } finally {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    }
  }
}

function infoOf(key: string, s: import('node:fs').BigIntStats): BlobInfo {
  // Every write renames a fresh file into place, so (inode, mtime in ns, size) changes on each write.
  return {
    key,
    etag: `${s.ino.toString(36)}-${s.mtimeNs.toString(36)}-${s.size.toString(36)}`,
    size: Number(s.size),
    lastModified: new Date(Number(s.mtimeMs)),
  };
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}
