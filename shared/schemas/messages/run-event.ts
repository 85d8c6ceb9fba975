// The run-events queue message: S3's notification of an upload under `runs/<runId>/input/` (a dataset, or the run's
// config.yaml), or the run-starter's own delayed look at a run's inputs while it waits for them.
import { z } from 'zod';
import { templatePattern } from '#shared/templates';
import { KEY_TEMPLATES } from '#shared/topology';
import { S3NotificationSchema } from './s3-event.ts';

/**
 * The run-starter's look at a run's inputs, `check` (1, 2, ...) after its config.yaml arrived: sent by the
 * run-starter to its own queue with a delay while a dataset the config names is missing (a `.json` dataset
 * notifies nothing; a file may never come), until the run starts or its inputs have waited too long.
 * @example {"schemaVersion": 1, "kind": "input-check", "runId": "r-1a2b", "check": 1}
 */
export const InputCheckSchema = z.object({
  schemaVersion: z.literal(1),
  kind: z.literal('input-check'),
  runId: z.string().min(1),
  check: z.number().int().positive(),
});
export type InputCheck = z.infer<typeof InputCheckSchema>;

/**
 * A dataset (`*.parquet`, `*.jsonl`) or the config (`config.yaml`) was written under a run's input prefix; the
 * run-starter starts the run once the config and every file it names are present. Or an InputCheck.
 * @example {"Records": [{"eventSource": "aws:s3", "eventTime": "2025-01-01T00:00:00.000Z",
 *   "eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": "toolrl-dev"},
 *   "object": {"key": "runs/r-1a2b/input/train.parquet", "size": 1024, "eTag": "0123abcd"}}}]}
 */
export const RunEventSchema = z.union([S3NotificationSchema, InputCheckSchema]);
export type RunEvent = z.infer<typeof RunEventSchema>;

const INPUT_KEY = templatePattern(`${KEY_TEMPLATES.inputPrefix}{file}`, { file: '.+' });

/** `runs/<runId>/input/<file>` -> `{runId, file}`; undefined for any other key. */
export function parseInputKey(key: string): { runId: string; file: string } | undefined {
  const g = INPUT_KEY.exec(key)?.groups;
  return g ? { runId: g.runId!, file: g.file! } : undefined;
}

/** A run id is one key segment of letters, digits, `.`, `_` and `-` (it names S3 prefixes and log streams). */
export const RunIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'a run id is letters, digits, ".", "_" and "-" (max 128)');

/**
 * A new run's id: the config's name as a slug, the UTC start time and an optional suffix, e.g.
 * `calc-grpo-20250101-120000` (embedded runs, unique per second and workdir) or `calc-grpo-20250101-120000-3f9a`
 * (submitted runs add random hex so two users never collide). Always satisfies RunIdSchema.
 */
export function newRunId(name: string, now = new Date(), suffix = ''): string {
  const trim = (s: string) => s.replace(/^[-._]+|[-._]+$/g, '');
  const slug = trim(trim(name.toLowerCase().replace(/[^a-z0-9._-]+/g, '-')).slice(0, 96)) || 'run';
  const t = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return suffix ? `${slug}-${t}-${suffix}` : `${slug}-${t}`;
}
