// The converters by `--from` name.
import { jsonlConverter } from './jsonl.ts';
import { mathConverter } from './math.ts';
import { qaConverter } from './qa.ts';
import { toolbenchConverter } from './toolbench.ts';
import type { Converter } from './types.ts';

const converters: Record<string, Converter> = Object.fromEntries(
  [jsonlConverter, toolbenchConverter, mathConverter, qaConverter].map((c) => [c.format, c]),
);
export const CONVERTERS: Readonly<Record<string, Converter>> = converters;

/** Adds a converter that lives above data/ (the BFCL slice, shared/bfcl/register.ts). */
export function registerConverter(converter: Converter): void {
  converters[converter.format] = converter;
}

export type { ConvertContext, ConvertedRow, Converter, ConvertResult, RowDraft } from './types.ts';
