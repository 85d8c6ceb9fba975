// Which objects the bucket's lifecycle rules expire. S3 lifecycle filters take a key prefix, not a pattern,
// and trajectories sit under each run's own prefix, so writers tag them instead: the AWS blob store passes
// `lifecycleTagging(key)` as PutObject's `Tagging`, and the CDK bucket expires objects by that tag.

export const LIFECYCLE_TAG_KEY = 'toolrl-lifecycle';

export type LifecycleClass = 'trajectory' | 'claim-check';

const CLASSES: readonly { pattern: RegExp; cls: LifecycleClass }[] = [
  { pattern: /^runs\/[^/]+\/trajectories\//, cls: 'trajectory' },
  { pattern: /^runs\/[^/]+\/messages\//, cls: 'claim-check' },
];

/** The lifecycle class of a bucket key, or null for objects kept until deleted (inputs, policies, checkpoints). */
export function lifecycleClass(key: string): LifecycleClass | null {
  return CLASSES.find((c) => c.pattern.test(key))?.cls ?? null;
}

/** PutObject's `Tagging` value (URL query form) for a key, or undefined when it has none. */
export function lifecycleTagging(key: string): string | undefined {
  const cls = lifecycleClass(key);
  return cls ? `${LIFECYCLE_TAG_KEY}=${cls}` : undefined;
}
