// The learner's step metrics (metrics/metrics.jsonl) and batches (metrics/batches.jsonl), read as a live run
// writes them: a line still being appended, or one a crash cut short, is skipped and named, never fatal.
import { z } from 'zod';
import { keys } from '#shared/topology';
import type { MetricsData, Problem } from './api.ts';
import type { ReadOnlyBlobs } from './source.ts';
import { issuesText } from './trajectory-index.ts';

export const METRICS_FILE = 'metrics.jsonl';
export const BATCHES_FILE = 'batches.jsonl';

/** One line of metrics/batches.jsonl, as the learner writes it (train/metrics.py `log_batch`). */
export const BatchRecordSchema = z.object({
  step: z.number().int().positive(),
  policy_version: z.number().int().nonnegative(),
  stage: z.string().nullable(),
  group_ids: z.array(z.string()),
});
export type BatchRecord = z.infer<typeof BatchRecordSchema>;

/** The parsed lines of a JSON-lines text, and a problem for each line that is not a JSON object. */
export function parseJsonLines(text: string, key: string): { rows: unknown[]; problems: Problem[] } {
  const lines = text.split('\n');
  const torn = !text.endsWith('\n');
  const rows: unknown[] = [];
  const problems: Problem[] = [];
  lines.forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      rows.push(JSON.parse(line));
    } catch (err) {
      const last = i === lines.length - 1 && torn;
      problems.push({
        key,
        message: last
          ? `line ${i + 1}, the last, is cut short (${line.length} characters, no newline: still being written, ` +
            'or torn by a crash); skipped'
          : `line ${i + 1} is not JSON (${(err as Error).message}); skipped`,
      });
    }
  });
  return { rows, problems };
}

async function readLines(
  blobs: ReadOnlyBlobs,
  key: string,
): Promise<{ rows: unknown[]; problems: Problem[] }> {
  const body = await blobs.get(key);
  if (!body) return { rows: [], problems: [] };
  return parseJsonLines(Buffer.from(body).toString('utf8'), key);
}

/** The learner's batches: which groups each step trained, under which stage. */
export async function readBatches(
  blobs: ReadOnlyBlobs,
  runId: string,
): Promise<{ batches: BatchRecord[]; present: boolean; problems: Problem[] }> {
  const key = keys.metrics(runId) + BATCHES_FILE;
  const { rows, problems } = await readLines(blobs, key);
  const batches: BatchRecord[] = [];
  rows.forEach((row, i) => {
    const r = BatchRecordSchema.safeParse(row);
    if (r.success) batches.push(r.data);
    else problems.push({ key, message: `record ${i + 1}: ${issuesText(r.error)}; skipped` });
  });
  return { batches, present: rows.length > 0 || problems.length > 0, problems };
}

/** metrics.jsonl by column (numbers only), with stage marks from the batches. */
export async function readMetrics(
  blobs: ReadOnlyBlobs,
  runId: string,
  batches: readonly BatchRecord[],
  hasBatches: boolean,
): Promise<{ data: MetricsData; problems: Problem[] }> {
  const key = keys.metrics(runId) + METRICS_FILE;
  const { rows, problems } = await readLines(blobs, key);
  const steps: number[] = [];
  const values: Record<string, (number | null)[]> = {};
  for (const [i, row] of rows.entries()) {
    const step = (row as { step?: unknown } | null)?.step;
    if (typeof row !== 'object' || row === null || typeof step !== 'number') {
      problems.push({ key, message: `row ${i + 1} has no numeric "step"; skipped` });
      continue;
    }
    const at = steps.length;
    steps.push(step);
    for (const [name, v] of Object.entries(row)) {
      if (name === 'step' || (typeof v !== 'number' && v !== null)) continue;
      let column = values[name];
      if (!column) {
        column = new Array<number | null>(at).fill(null);
        values[name] = column;
      }
      column[at] = v;
    }
    for (const column of Object.values(values)) if (column.length <= at) column.push(null);
  }
  const stageMarks: { step: number; stage: string }[] = [];
  let current: string | null | undefined;
  for (const b of [...batches].sort((a, b) => a.step - b.step)) {
    if (b.stage !== current && b.stage !== null) stageMarks.push({ step: b.step, stage: b.stage });
    current = b.stage;
  }
  return { data: { steps, values, stageMarks, hasBatches }, problems };
}
