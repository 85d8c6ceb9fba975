// `inspectDataset`: what is in a Parquet file, tolerant of rows that would not validate (use
// validateDataset for that): row count, columns, data sources, prompt-length percentiles, a sample row.
import { openDataset, parseRow } from './dataset.ts';
import { iterateParquetRows, type ParquetSource, type Row } from './parquet.ts';
import type { CountTokens } from './tokens.ts';

export interface Percentiles {
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface InspectResult {
  rows: number;
  columns: string[];
  data_sources: Record<string, number>;
  /** Characters of prompt text (all message contents) per row. */
  prompt_chars: Percentiles | null;
  /** Tokens per prompt with the chat template, when a tokenizer was given (valid rows only). */
  prompt_tokens?: Percentiles | null;
  /** Messages per prompt. */
  prompt_messages: Percentiles | null;
  rows_with_tools: number;
  sample: Row | null;
}

/** Nearest-rank percentiles (p-th value of the sorted list at rank ceil(p/100 * n)). */
export function percentiles(values: readonly number[]): Percentiles | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
  const mean = sorted.reduce((a, b) => a + b, 0) / sorted.length;
  return {
    min: sorted[0]!,
    p50: rank(50),
    p90: rank(90),
    p99: rank(99),
    max: sorted.at(-1)!,
    mean: Math.round(mean * 10) / 10,
  };
}

function promptText(prompt: unknown): { chars: number; messages: number } | undefined {
  if (typeof prompt === 'string') return { chars: prompt.length, messages: 1 };
  if (!Array.isArray(prompt)) return undefined;
  let chars = 0;
  for (const m of prompt) {
    const c = typeof m === 'object' && m !== null ? (m as Record<string, unknown>).content : undefined;
    if (typeof c === 'string') chars += c.length;
  }
  return { chars, messages: prompt.length };
}

export async function inspectDataset(
  source: ParquetSource,
  options: { countTokens?: CountTokens } = {},
): Promise<InspectResult> {
  const pf = await openDataset(source);
  const dataSources: Record<string, number> = {};
  const chars: number[] = [];
  const messages: number[] = [];
  const tokens: number[] = [];
  let withTools = 0;
  let sample: Row | null = null;
  for await (const { rowNumber, row } of iterateParquetRows(pf)) {
    if (sample === null) sample = row;
    if (typeof row.data_source === 'string')
      dataSources[row.data_source] = (dataSources[row.data_source] ?? 0) + 1;
    const text = promptText(row.prompt);
    if (text) {
      chars.push(text.chars);
      messages.push(text.messages);
    }
    const extra = row.extra_info as Record<string, unknown> | undefined;
    if (extra?.tools !== undefined) withTools++;
    if (options.countTokens) {
      const parsed = parseRow(row, rowNumber);
      if ('row' in parsed) tokens.push(options.countTokens(parsed.row));
    }
  }
  return {
    rows: pf.numRows,
    columns: pf.columns,
    data_sources: dataSources,
    prompt_chars: percentiles(chars),
    ...(options.countTokens ? { prompt_tokens: percentiles(tokens) } : {}),
    prompt_messages: percentiles(messages),
    rows_with_tools: withTools,
    sample,
  };
}
