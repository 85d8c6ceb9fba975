// The converters by `--from` name.
import { bfclConverter } from './bfcl.ts';
import { jsonlConverter } from './jsonl.ts';
import { mathConverter } from './math.ts';
import { qaConverter } from './qa.ts';
import { toolbenchConverter } from './toolbench.ts';
import type { Converter } from './types.ts';

export const CONVERTERS: Readonly<Record<string, Converter>> = Object.fromEntries(
  [jsonlConverter, toolbenchConverter, mathConverter, qaConverter, bfclConverter].map((c) => [c.format, c]),
);

export type { ConvertContext, ConvertedRow, Converter, ConvertResult, RowDraft } from './types.ts';
