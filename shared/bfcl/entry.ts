// A BFCL entry as a dataset row carries it (`toolrl dataset convert --from bfcl` keeps BFCL's own names in
// extra_info: `id`, `initial_config`, `involved_classes`; the ground truth in reward_model.ground_truth), read
// back with errors that say which field is missing.
import { z } from 'zod';
import type { BfclEntry } from './protocol.ts';

/** Parquet writers may store a free-form object as a JSON string; read it back. */
const jsonString = (v: unknown): unknown => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v);
  } catch {
    return v;
  }
};

const RowEntrySchema = z.object({
  id: z.string().min(1),
  initial_config: z.preprocess(jsonString, z.record(z.string(), z.unknown())),
  involved_classes: z.preprocess(jsonString, z.array(z.string().min(1)).min(1)),
});

/** BFCL's ground truth: per user turn, the list of call strings (`cd(folder='document')`). */
export const GroundTruthSchema = z.preprocess(jsonString, z.array(z.array(z.string())).min(1));

const describe = (e: z.ZodError): string =>
  e.issues.map((i) => `${i.path.length ? i.path.join('.') : '(value)'}: ${i.message}`).join('; ');

/** The entry of a row's extra_info; throws naming the missing or malformed field. */
export function bfclEntryOf(extraInfo: Record<string, unknown> | undefined): BfclEntry {
  const r = RowEntrySchema.safeParse(extraInfo ?? {});
  if (!r.success)
    throw new Error(
      `not a BFCL row: extra_info needs id, initial_config and involved_classes (${describe(r.error)}); convert entries with \`toolrl bfcl dataset\``,
    );
  return { id: r.data.id, initialConfig: r.data.initial_config, involvedClasses: r.data.involved_classes };
}

export function groundTruthOf(value: unknown): string[][] {
  const r = GroundTruthSchema.safeParse(value);
  if (!r.success)
    throw new Error(`BFCL ground truth must be one list of call strings per user turn: ${describe(r.error)}`);
  return r.data;
}
