// The embedded BlobStore: a local folder where a key is a relative path. Writes go to a temp file and are
// renamed (or linked) into place, so readers (including the Python learner) never see a partial object.
// Small-object operations use synchronous file calls: on one machine they take microseconds, whereas each
// asynchronous call pays a thread-pool round trip that dominated the embedded pipeline's overhead.
import {
  type BigIntStats,
  closeSync,
  createReadStream,
  type Dirent,
  fstatSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join, sep } from 'node:path';
import type { Readable } from 'node:stream';
import {
  assertValidKey,
  type BlobInfo,
  type BlobStore,
  type Body,
  type ConditionalPut,
} from '#shared/ports/blob-store';

const TMP_PREFIX = '.tmp-';
let tmpCounter = 0;

/** Notified after every successful write (the runtime turns matching keys into S3-style events). */
export type PutListener = (key: string, info: BlobInfo) => void;

export class FolderBlobStore implements BlobStore {
  readonly describe: string;
  private readonly listeners: PutListener[] = [];
  /** Directories known to exist (a write then skips its mkdir). */
  private readonly dirs = new Set<string>();

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
      return readFileSync(this.localPath(key));
    } catch (err) {
      if (isMissing(err) || (err as NodeJS.ErrnoException).code === 'EISDIR') return undefined;
      throw err;
    }
  }

  async read(key: string): Promise<{ body: Uint8Array; etag: string } | undefined> {
    let fd: number;
    try {
      fd = openSync(this.localPath(key), 'r');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    try {
      // The etag and the bytes come from one open file: a concurrent write renames a new file into place and
      // leaves this one as it was, so the pair is always consistent.
      const stats = fstatSync(fd, { bigint: true });
      if (!stats.isFile()) return undefined;
      const body = Buffer.allocUnsafe(Number(stats.size));
      let off = 0;
      while (off < body.length) {
        const n = readSync(fd, body, off, body.length - off, off);
        if (n === 0) break;
        off += n;
      }
      return { body: body.subarray(0, off), etag: infoOf(key, stats).etag };
    } finally {
      closeSync(fd);
    }
  }

  async getStream(key: string): Promise<Readable | undefined> {
    if (!(await this.head(key))) return undefined;
    return createReadStream(this.localPath(key));
  }

  async head(key: string): Promise<BlobInfo | undefined> {
    return this.headSync(key);
  }

  async put(key: string, body: Body): Promise<{ etag: string }> {
    const path = this.localPath(key);
    const { tmp, stats } = this.writeTemp(path, body);
    renameSync(tmp, path);
    return { etag: this.announce(key, stats).etag };
  }

  async putIfAbsent(key: string, body: Body): Promise<ConditionalPut> {
    const path = this.localPath(key);
    const { tmp, stats } = this.writeTemp(path, body);
    try {
      // link(2) fails with EEXIST when the target exists: atomic across processes, and the object appears
      // complete because the temp file was fully written first.
      linkSync(tmp, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return { written: false };
      throw err;
    } finally {
      unlinkSync(tmp);
    }
    return { written: true, etag: this.announce(key, stats).etag };
  }

  /**
   * Compare-and-swap on the etag. The check and the write run synchronously, so nothing else in this process
   * interleaves; the pipeline is the only writer of the keys it updates this way (run.json, feeder state).
   */
  async putIfMatch(key: string, body: Body, etag: string): Promise<ConditionalPut> {
    const current = this.headSync(key);
    if (!current || current.etag !== etag) return { written: false };
    const path = this.localPath(key);
    const { tmp, stats } = this.writeTemp(path, body);
    renameSync(tmp, path);
    return { written: true, etag: this.announce(key, stats).etag };
  }

  async list(prefix: string): Promise<BlobInfo[]> {
    return this.listKeysSync(prefix).flatMap((k) => {
      const info = this.headSync(k);
      return info ? [info] : [];
    });
  }

  async listKeys(prefix: string): Promise<string[]> {
    return this.listKeysSync(prefix);
  }

  async delete(key: string): Promise<void> {
    rmSync(this.localPath(key), { force: true });
  }

  private headSync(key: string): BlobInfo | undefined {
    const s = statSync(this.localPath(key), { bigint: true, throwIfNoEntry: false });
    return s?.isFile() ? infoOf(key, s) : undefined;
  }

  private listKeysSync(prefix: string): string[] {
    // Walk only the deepest directory the prefix names; the remainder is a file-name prefix.
    const slash = prefix.lastIndexOf('/');
    const dirKey = slash >= 0 ? prefix.slice(0, slash) : '';
    if (dirKey) assertValidKey(dirKey);
    const out: string[] = [];
    this.walk(dirKey, prefix, out);
    return out.sort();
  }

  private walk(dirKey: string, prefix: string, out: string[]): void {
    const dir = dirKey ? join(this.root, ...dirKey.split('/')) : this.root;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err)) return;
      throw err;
    }
    for (const e of entries) {
      if (e.name.startsWith(TMP_PREFIX)) continue;
      const key = dirKey ? `${dirKey}/${e.name}` : e.name;
      if (e.isDirectory()) {
        // Descend when the directory can contain keys with the prefix.
        if (`${key}/`.startsWith(prefix) || prefix.startsWith(`${key}/`)) this.walk(key, prefix, out);
      } else if (e.isFile() && key.startsWith(prefix)) out.push(key);
    }
  }

  /** Writes `body` to a fresh temp file next to `path`; its stats carry over to the renamed/linked object. */
  private writeTemp(path: string, body: Body): { tmp: string; stats: BigIntStats } {
    const dir = dirname(path);
    if (!this.dirs.has(dir)) {
      mkdirSync(dir, { recursive: true });
      this.dirs.add(dir);
    }
    const tmp = `${dir}${sep}${TMP_PREFIX}${process.pid}-${++tmpCounter}`;
    let fd: number;
    try {
      fd = openSync(tmp, 'wx');
    } catch (err) {
      if (!isMissing(err)) throw err;
      // The directory was removed behind our back (a test cleaning up): create it again.
      mkdirSync(dir, { recursive: true });
      fd = openSync(tmp, 'wx');
    }
    try {
      const data = typeof body === 'string' ? Buffer.from(body) : body;
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
      return { tmp, stats: fstatSync(fd, { bigint: true }) };
    } finally {
      closeSync(fd);
    }
  }

  private announce(key: string, stats: BigIntStats): BlobInfo {
    const info = infoOf(key, stats);
    for (const l of this.listeners) l(key, info);
    return info;
  }
}

function infoOf(key: string, s: BigIntStats): BlobInfo {
  // Every write puts a fresh file in place, so (inode, mtime in ns, size) changes on each write.
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
