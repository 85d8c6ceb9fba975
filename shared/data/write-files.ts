// Writes several files as one (`dataset convert --split`: the train and the validation file): each is written to
// a temp file beside its target, then all are renamed into place. If any step fails, every target is left as it
// was (new files removed, replaced ones restored), so a failure never leaves one file of the pair written.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';

/** A file could not be written; the message names it and the system's reason. */
export class FileWriteError extends Error {
  override name = 'FileWriteError';
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(`cannot write ${path}: ${(cause as Error).message ?? String(cause)}`, { cause });
  }
}

interface Staged {
  path: string;
  tmp: string;
  backup?: string;
  placed: boolean;
}

export function writeFilesAtomic(files: readonly { path: string; bytes: Uint8Array }[]): void {
  const targets = files.map((f) => resolve(f.path));
  const twice = targets.find((p, i) => targets.indexOf(p) !== i);
  if (twice !== undefined) throw new FileWriteError(twice, new Error('the same file is named twice'));
  const staged: Staged[] = [];
  let current = '';
  try {
    for (const f of files) {
      current = f.path;
      if (existsSync(f.path) && statSync(f.path).isDirectory()) throw new Error('it is a directory');
      const s: Staged = {
        path: f.path,
        tmp: join(dirname(f.path), `.${basename(f.path)}.${randomBytes(6).toString('hex')}.tmp`),
        placed: false,
      };
      staged.push(s);
      mkdirSync(dirname(f.path), { recursive: true });
      writeFileSync(s.tmp, f.bytes);
    }
    for (const s of staged) {
      current = s.path;
      if (existsSync(s.path)) {
        s.backup = `${s.tmp}.old`;
        renameSync(s.path, s.backup);
      }
      renameSync(s.tmp, s.path);
      s.placed = true;
    }
  } catch (err) {
    for (const s of staged.reverse()) {
      if (s.placed) quietly(() => rmSync(s.path, { force: true }));
      if (s.backup) quietly(() => renameSync(s.backup!, s.path));
      quietly(() => rmSync(s.tmp, { force: true })); // ENOTDIR where its folder could not be made
    }
    throw new FileWriteError(current, err);
  }
  for (const s of staged) if (s.backup) rmSync(s.backup, { force: true });
}

/** Undo steps run on a path already failing: one that fails too must not hide the first error. */
function quietly(step: () => void): void {
  try {
    step();
  } catch {}
}
