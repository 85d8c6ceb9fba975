// What a converter is: input file(s) in, rows (without `extra_info.index`, assigned by the caller in
// output order) out, each tagged with the line or entry it came from so later checks can point at it.
import type { DatasetRowInput } from '#shared/schemas/dataset-row';

export type RowDraft = Omit<DatasetRowInput, 'extra_info'> & { extra_info: Record<string, unknown> };

export interface ConvertedRow {
  /** `line 12` / `entry 3`, optionally with the file when a converter reads several. */
  at: string;
  row: RowDraft;
}

export interface ConvertContext {
  /** The input file (or folder, for BFCL). */
  input: string;
  /** `--data-source`: overrides the converter's default and any per-record value. */
  dataSource?: string;
  /** BFCL: the possible-answer file with the ground truth (default: `possible_answer/<name>` next to the input). */
  answers?: string;
  /** ToolBench: the category of rows whose data names none (ToolLLaMA conversations). */
  category?: string;
  /** ToolBench queries: `hermes` (tools for the chat template) or `react` (ToolLLaMA's format, tools in the prompt). */
  callFormat?: 'hermes' | 'react';
  /** BFCL: the interpreter with bfcl-eval that prepares entries without function docs (default: see bfclPython). */
  bfclPython?: string;
}

export interface ConvertResult {
  rows: ConvertedRow[];
  /** Things the user should know (duplicates dropped, …). */
  notes: string[];
}

export interface Converter {
  readonly format: string;
  readonly description: string;
  convert(ctx: ConvertContext): ConvertResult;
}
