// Raw BFCL entries made ready to train on, synchronously (`toolrl dataset convert` is synchronous): BFCL's own loader
// code, run in the BFCL environment (`python -m toolrl_bfcl prepare`), adds the involved classes' function docs and
// turns held-out function names into docs. Without that environment it says how to set it up.
import { execFileSync } from 'node:child_process';
import { delimiter } from 'node:path';
import { BFCL_PACKAGE_DIR, readyBfclPython } from './env.ts';

/** The BFCL environment is missing, or BFCL's loader refused an entry. */
export class BfclPrepareError extends Error {
  override name = 'BfclPrepareError';
}

export interface PrepareOptions {
  /** Interpreter with bfcl-eval (default: TOOLRL_BFCL_PYTHON, else the one `toolrl bfcl setup` made). */
  python?: string;
}

/** The entries (BFCL's JSON objects) with `function` and `missed_function` as BFCL's loader prepares them. */
export function prepareBfclEntries(
  entries: readonly Record<string, unknown>[],
  opts: PrepareOptions = {},
): Record<string, unknown>[] {
  if (entries.length === 0) return [];
  const python = readyBfclPython(opts.python);
  if (!python)
    throw new BfclPrepareError(
      `their tools are the function docs of their involved classes, which only BFCL's own package has, and its Python environment is not set up${opts.python ? ` (no interpreter at ${opts.python})` : ''}: run \`npx toolrl bfcl setup\` and convert again, or write the rows with \`npx toolrl bfcl dataset\` (BFCL's loader, entries chosen by category or id)`,
    );
  let out: string;
  try {
    out = execFileSync(python, ['-m', 'toolrl_bfcl', 'prepare'], {
      input: entries.map((e) => JSON.stringify(e)).join('\n'),
      encoding: 'utf8',
      env: {
        ...process.env,
        PYTHONPATH: [BFCL_PACKAGE_DIR, process.env.PYTHONPATH].filter(Boolean).join(delimiter),
      },
      maxBuffer: 256 << 20,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new BfclPrepareError(`BFCL's loader failed: ${e.stderr?.trim().split('\n').at(-1) || e.message}`);
  }
  const prepared = out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  if (prepared.length !== entries.length)
    throw new BfclPrepareError(`BFCL's loader returned ${prepared.length} entries for ${entries.length}`);
  return prepared;
}
