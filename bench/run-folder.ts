// What the benchmarks read back from a finished `toolrl train` run folder: the validation summaries
// (metrics/eval/v<N>.json, oldest version first) and the learner's step rows (metrics/metrics.jsonl).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The fields of a validation summary the benchmarks use, with its time as epoch milliseconds. */
export interface EvalSummary {
  readonly policyVersion: number;
  readonly accuracy: number;
  readonly passAtK: number;
  readonly samplesPerPrompt: number;
  readonly rewardMean: number;
  readonly toolCallsPerTrajectory: number;
  /** The reward component read as accuracy (`toolcall/final_answer`); null when the run's rewards declare none. */
  readonly accuracyComponent: string | null;
  readonly at: number;
}

export function readEvalSummaries(runDir: string): EvalSummary[] {
  const dir = join(runDir, 'metrics', 'eval');
  return readdirSync(dir)
    .filter((f) => /^v\d+\.json$/.test(f))
    .map((f) => {
      const s = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      return { ...s, at: Date.parse(s.createdAt) } as EvalSummary;
    })
    .sort((a, b) => a.policyVersion - b.policyVersion);
}

/** metrics.jsonl: one object per learner step. */
export function readStepRows(runDir: string): Record<string, number>[] {
  return readFileSync(join(runDir, 'metrics', 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number>);
}
