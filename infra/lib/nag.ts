// Helpers for acknowledging cdk-nag findings next to the construct that causes them. cdk-nag v3 needs the
// exact finding id of each wildcard, so the id is rendered with cdk-nag's own flattening of the reference.
import { Stack, Validations } from 'aws-cdk-lib';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference';
import type { IConstruct } from 'constructs';

/** cdk-nag's id for the wildcard resource `<bucket ARN>/pattern` in an IAM policy of `scope`'s stack. */
export function bucketObjectsWildcardFinding(scope: IConstruct, bucket: s3.IBucket, pattern: string): string {
  const resolved = Stack.of(scope).resolve(bucket.arnForObjects(pattern));
  return `AwsSolutions-IAM5[Resource::${flattenCfnReference(resolved)}]`;
}

/** Acknowledges the wildcard finding of each key pattern (run ids are only known at run time). */
export function acknowledgeRunKeyPatterns(
  scope: IConstruct,
  bucket: s3.IBucket,
  patterns: Iterable<string>,
): void {
  for (const pattern of new Set(patterns))
    Validations.of(scope).acknowledge({
      id: bucketObjectsWildcardFinding(scope, bucket, pattern),
      reason: `Scoped to ${pattern}: the run id (and group or message id) is chosen at run time, so the key cannot be fixed at deploy time.`,
    });
}
