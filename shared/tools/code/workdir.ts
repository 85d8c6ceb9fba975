// The run's work dir: input files placed inside it (never outside), handed to the throwaway uid, and files read
// back after the run without following links the program planted.
import { chownSync } from 'node:fs';
import { lstat, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative, resolve, sep } from 'node:path';

const FETCH_FILE_MAX_BYTES = 1024 * 1024;

/** Resolves a user-given relative path inside `dir`; anything escaping it is refused. */
export function insideDir(dir: string, name: string): string {
  const target = resolve(dir, normalize(name));
  const rel = relative(dir, target);
  if (!name || rel.startsWith('..') || rel.startsWith(sep) || rel === '' || name.includes('\0'))
    throw new Error(`file path "${name}" must stay inside the work dir`);
  return target;
}

export function chownTree(workdir: string, uid: number, files?: Record<string, string>): void {
  chownSync(workdir, uid, uid);
  chownSync(join(workdir, 'main.py'), uid, uid);
  for (const name of Object.keys(files ?? {})) {
    let p = insideDir(workdir, name);
    while (p !== workdir) {
      chownSync(p, uid, uid);
      p = dirname(p);
    }
  }
}

export async function fetchFiles(workdir: string, names: string[]): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of names) {
    let target: string;
    try {
      target = insideDir(workdir, name);
    } catch {
      continue;
    }
    // lstat, not stat: a symlink the program planted (to /etc/shadow, say) is never followed.
    const st = await lstat(target).catch(() => null);
    if (!st?.isFile() || st.size > FETCH_FILE_MAX_BYTES) continue;
    const parents = relative(workdir, dirname(target));
    if (parents && (await hasLinkOnPath(workdir, parents))) continue;
    files[name] = (await readFile(target)).toString('base64');
  }
  return files;
}

/** The files the launcher sent back under bwrap: `base64(name) base64(content)` lines (see launcher.py). */
export function parseFetchedFiles(text: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const [name, content] = line.split(' ');
    if (name && content !== undefined) files[Buffer.from(name, 'base64').toString('utf8')] = content;
  }
  return files;
}

async function hasLinkOnPath(base: string, rel: string): Promise<boolean> {
  let p = base;
  for (const part of rel.split(sep)) {
    p = join(p, part);
    const st = await lstat(p).catch(() => null);
    if (!st || st.isSymbolicLink()) return true;
  }
  return false;
}
