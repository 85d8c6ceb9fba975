// The policy-events queue message: S3's notification that the learner moved `policy/LATEST.json` (a new
// version) or rewrote `learner/state.json` (a committed step). Both wake the feeder.
import type { z } from 'zod';
import { templatePattern } from '#shared/templates';
import { KEY_TEMPLATES } from '#shared/topology';
import { S3NotificationSchema } from './s3-event.ts';

/**
 * @example {"Records": [{"eventSource": "aws:s3", "eventTime": "2025-01-01T00:00:00.000Z",
 *   "eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": "toolrl-dev"},
 *   "object": {"key": "runs/r-1a2b/policy/LATEST.json", "size": 96}}}]}
 */
export const PolicyEventSchema = S3NotificationSchema;
export type PolicyEvent = z.infer<typeof PolicyEventSchema>;

const LATEST_KEY = templatePattern(KEY_TEMPLATES.policyLatest);
const LEARNER_STATE_KEY = templatePattern(KEY_TEMPLATES.learnerState);

/** Which run and which kind of learner progress a key announces; undefined for other keys. */
export function parsePolicyEventKey(
  key: string,
): { runId: string; kind: 'latest' | 'learner-state' } | undefined {
  const latest = LATEST_KEY.exec(key)?.groups;
  if (latest) return { runId: latest.runId!, kind: 'latest' };
  const state = LEARNER_STATE_KEY.exec(key)?.groups;
  return state ? { runId: state.runId!, kind: 'learner-state' } : undefined;
}
