// `validateDataset`: every problem of a dataset file with its row number, without stopping at the first.
// The run-starter calls it on an uploaded dataset and fails the run with these messages.
import { heldOutTools } from '#shared/episode/user-turns';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { DatasetError, type DatasetProblem, openDataset, parseRow } from './dataset.ts';
import { iterateParquetRows, type ParquetSource } from './parquet.ts';

export interface ValidateOptions {
  /** Prompts longer than this many tokens are problems (checked only with `countTokens`). */
  maxPromptLength?: number;
  /** Tokens of a row's prompt as the rollout renders it (see loadTokenCounter). */
  countTokens?: (row: DatasetRow) => number | Promise<number>;
}

export interface ValidationResult {
  ok: boolean;
  rows: number;
  problems: DatasetProblem[];
  data_sources: Record<string, number>;
  /** Whether prompt lengths were checked (they need both maxPromptLength and countTokens). */
  prompt_length_checked: boolean;
  /** The longest prompt in tokens (when counted). */
  max_prompt_tokens?: number;
}

export async function validateDataset(
  source: ParquetSource,
  options: ValidateOptions = {},
): Promise<ValidationResult> {
  const problems: DatasetProblem[] = [];
  const dataSources: Record<string, number> = {};
  const checkLength = options.maxPromptLength !== undefined && options.countTokens !== undefined;
  let maxTokens: number | undefined;
  let pf: Awaited<ReturnType<typeof openDataset>>;
  try {
    pf = await openDataset(source);
  } catch (err) {
    if (!(err instanceof DatasetError)) throw err;
    return { ok: false, rows: 0, problems: err.problems, data_sources: {}, prompt_length_checked: false };
  }
  if (pf.numRows === 0) problems.push({ row: null, message: 'the dataset has no rows' });
  const firstRowOfIndex = new Map<number, number>();
  for await (const { rowNumber, row: raw } of iterateParquetRows(pf)) {
    const r = parseRow(raw, rowNumber);
    if ('problems' in r) {
      problems.push(...r.problems);
      continue;
    }
    const row = r.row;
    dataSources[row.data_source] = (dataSources[row.data_source] ?? 0) + 1;
    const first = firstRowOfIndex.get(row.extra_info.index);
    if (first !== undefined) {
      problems.push({
        row: rowNumber,
        message: `extra_info.index ${row.extra_info.index} repeats row ${first}'s; each row needs its own id`,
      });
    } else firstRowOfIndex.set(row.extra_info.index, rowNumber);
    problems.push(...bfclProblems(row, rowNumber));
    if (checkLength) {
      const n = await options.countTokens!(row);
      maxTokens = Math.max(maxTokens ?? 0, n);
      if (n > options.maxPromptLength!) {
        problems.push({
          row: rowNumber,
          message: `prompt is ${n} tokens, over max_prompt_length ${options.maxPromptLength}`,
        });
      }
    }
  }
  return {
    ok: problems.length === 0,
    rows: pf.numRows,
    problems,
    data_sources: dataSources,
    prompt_length_checked: checkLength,
    ...(maxTokens !== undefined ? { max_prompt_tokens: maxTokens } : {}),
  };
}

/**
 * A BFCL row (BFCL's `involved_classes` in extra_info) trains only with its functions as tool schemas: without
 * them the model sees no functions, and held-out ones given by name (a raw entry) break the episode at their turn.
 */
function bfclProblems(row: DatasetRow, rowNumber: number): DatasetProblem[] {
  if (row.extra_info.involved_classes === undefined) return [];
  const fix =
    'convert BFCL entries with `npx toolrl bfcl dataset`, or `dataset convert --from bfcl` once `npx toolrl bfcl setup` has run';
  const out: DatasetProblem[] = [];
  if (!row.extra_info.tools?.length)
    out.push({
      row: rowNumber,
      message: `a BFCL row without tool schemas (extra_info.tools): the model would see none of its classes' functions; ${fix}`,
    });
  try {
    heldOutTools(row.extra_info);
  } catch (err) {
    out.push({ row: rowNumber, message: (err as Error).message });
  }
  return out;
}
