// `toolrl select`: chooses a run's final policy on a dataset of its own (a dev split), as TRL's
// `load_best_model_at_end` chooses a checkpoint by an evaluation metric. The candidates are the versions the run
// validated after v0 (v0 is where training started, as TRL evaluates no step 0) whose rollout bundles are still in
// its folder (`policy/v<N>/`; retention keeps every multiple of `eval_every` and the final one); each is scored with `toolrl eval`'s code on the dev data and the one with the
// highest accuracy wins (a tie goes to the later version: it trained longer). The choice never looks at the run's
// own validation, so that validation still measures the chosen policy on questions the choice did not see.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { type EvalSummary, EvalSummarySchema } from '#shared/pipeline/eval';
import { evaluate, runConfigBeside } from './evaluate.ts';

/**
 * `runs/<runId>/metrics/select.json`.
 * @example {"schemaVersion": 1, "data": "/abs/dev.parquet", "samplesPerPrompt": 4, "chosen": 12,
 *   "candidates": [{"version": 12, "accuracy": 0.71, "passAtK": 0.86, "valAccuracy": 0.70},
 *   {"version": 24, "accuracy": 0.64, "passAtK": 0.8, "valAccuracy": 0.62}], "createdAt": "2026-12-06T00:00:00.000Z"}
 */
export const SelectionSchema = z.object({
  schemaVersion: z.literal(1),
  /** The dataset the choice was made on. */
  data: z.string(),
  samplesPerPrompt: z.number().int().positive(),
  /** The chosen policy version: its bundle is `policy/v<chosen>/`. */
  chosen: z.number().int().nonnegative(),
  candidates: z.array(
    z.object({
      version: z.number().int().nonnegative(),
      /** Mean accuracy on `data` (mean@k). */
      accuracy: z.number(),
      passAtK: z.number().nullable(),
      /** The run's own validation accuracy of this version, for the record: the choice does not read it. */
      valAccuracy: z.number().nullable(),
    }),
  ),
  createdAt: z.string(),
});
export type Selection = z.infer<typeof SelectionSchema>;

export interface SelectOptions {
  /** The run's folder, `<workdir>/runs/<runId>/`. */
  readonly runDir: string;
  /** The dev data: a dataset the run neither trained nor validated on. */
  readonly dataPath: string;
  /** Only these versions (each must be a validated one with its bundle; 0 may be one); default: every validated version after v0. */
  readonly versions?: readonly number[];
  /** Samples per prompt: the run's `rollout.val_kwargs.n` unless given. */
  readonly n?: number;
  readonly ortThreads?: number;
  readonly python?: string;
  /** Told each candidate's score as it is known. */
  readonly onCandidate?: (version: number, summary: EvalSummary) => void;
}

/** The versions the run validated (metrics/eval/v<N>.json), each with its validation summary, in version order. */
function validated(runDir: string): Map<number, EvalSummary> {
  const dir = join(runDir, 'metrics', 'eval');
  const out = new Map<number, EvalSummary>();
  if (!existsSync(dir)) return out;
  for (const f of readdirSync(dir)) {
    if (!/^v\d+\.json$/.test(f)) continue;
    const s = EvalSummarySchema.parse(JSON.parse(readFileSync(join(dir, f), 'utf8')));
    out.set(s.policyVersion, s);
  }
  return new Map([...out].sort((a, b) => a[0] - b[0]));
}

export class SelectError extends Error {}

/** The version with the highest accuracy; of equals, the latest (it trained longer). */
export function chooseBest(candidates: readonly { version: number; accuracy: number }[]): number {
  if (candidates.length === 0) throw new SelectError('no candidate to choose from');
  return candidates.reduce((b, c) =>
    c.accuracy > b.accuracy || (c.accuracy === b.accuracy && c.version > b.version) ? c : b,
  ).version;
}

export async function selectPolicy(opts: SelectOptions): Promise<Selection> {
  const runDir = resolve(opts.runDir);
  const beside = runConfigBeside(runDir);
  if (!beside) throw new SelectError(`${opts.runDir} is not a run folder (it has no run.json with a config)`);
  const val = validated(runDir);
  const bundle = (v: number) => join(runDir, 'policy', `v${v}`);
  const hasBundle = (v: number) => existsSync(join(bundle(v), 'manifest.json'));
  let versions: number[];
  if (opts.versions) {
    versions = [...new Set(opts.versions)].sort((a, b) => a - b);
    for (const v of versions) {
      if (!val.has(v))
        throw new SelectError(`v${v} was not validated by the run (no metrics/eval/v${v}.json)`);
      if (!hasBundle(v)) throw new SelectError(`v${v} has no rollout bundle (no policy/v${v}/manifest.json)`);
    }
  } else versions = [...val.keys()].filter((v) => v > 0 && hasBundle(v));
  if (versions.length === 0)
    throw new SelectError(
      `${opts.runDir} has no version validated after v0 with its bundle to choose from (metrics/eval/v<N>.json and policy/v<N>/)`,
    );
  const candidates: Selection['candidates'] = [];
  const summaries: EvalSummary[] = [];
  for (const version of versions) {
    const summary = await evaluate({
      policyDir: bundle(version),
      dataPath: opts.dataPath,
      config: beside.config,
      sourceDir: beside.sourceDir,
      ...(opts.n !== undefined ? { n: opts.n } : {}),
      ...(opts.ortThreads !== undefined ? { ortThreads: opts.ortThreads } : {}),
      ...(opts.python !== undefined ? { python: opts.python } : {}),
    });
    if (summary.accuracy === null)
      throw new SelectError(
        `the run's reward has no accuracy component to choose by (${opts.dataPath}, v${version})`,
      );
    summaries.push(summary);
    opts.onCandidate?.(version, summary);
    candidates.push({
      version,
      accuracy: summary.accuracy,
      passAtK: summary.passAtK ?? null,
      valAccuracy: val.get(version)?.accuracy ?? null,
    });
  }
  const selection: Selection = {
    schemaVersion: 1,
    data: resolve(opts.dataPath),
    samplesPerPrompt: summaries[0]?.samplesPerPrompt ?? opts.n ?? beside.config.rollout.val_kwargs.n,
    chosen: chooseBest(candidates),
    candidates,
    createdAt: new Date().toISOString(),
  };
  writeFileSync(join(runDir, 'metrics', 'select.json'), `${JSON.stringify(selection, null, 2)}\n`);
  return selection;
}
