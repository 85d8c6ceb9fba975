// The schemas exported as JSON Schema for the Python learner (gpu-worker validates what it reads).
import { z } from 'zod';
import { RunConfigSchema } from './config/run.ts';
import { DeadLetterRecordSchema } from './dead-letter.ts';
import { LearnerInputLineSchema, LearnerOutputLineSchema, LearnerStateSchema } from './learner-stdio.ts';
import { BundleManifestSchema, PolicyPointerSchema } from './policy.ts';
import { RunStatusSchema } from './run-status.ts';
import { ScoredGroupMessageSchema, ScoredGroupSchema } from './scored-group.ts';

export const EXPORTED: Record<string, z.ZodType> = {
  'scored-group': ScoredGroupSchema,
  'scored-group-message': ScoredGroupMessageSchema,
  'policy-pointer': PolicyPointerSchema,
  'bundle-manifest': BundleManifestSchema,
  'run-config': RunConfigSchema,
  'learner-stdio-in': LearnerInputLineSchema,
  'learner-stdio-out': LearnerOutputLineSchema,
  'learner-state': LearnerStateSchema,
  'run-status': RunStatusSchema,
  'dead-letter-record': DeadLetterRecordSchema,
};

/** JSON Schema (draft 2020-12) of one exported schema, as the learner reads it (input side: defaults optional). */
export function toJsonSchema(name: string): Record<string, unknown> {
  const schema = EXPORTED[name];
  if (!schema) throw new Error(`no exported schema named ${name}`);
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}

export const renderJsonSchema = (name: string): string => `${JSON.stringify(toJsonSchema(name), null, 2)}\n`;
