// Failure kinds a stage, or a port (a queue refusing an oversized message), can raise. A permanent error will
// fail the same way on every retry: its message goes to the dead-letter queue at once with the reason, instead
// of burning maxReceiveCount retries.
import { isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';

export class PermanentError extends Error {
  override name = 'PermanentError';
}

/** The message could not be parsed against its schema (or its claim check did not verify). */
export class BadMessageError extends PermanentError {
  override name = 'BadMessageError';
}

export const isPermanent = (err: unknown): err is PermanentError => err instanceof PermanentError;

/**
 * A failure of a cloud service call that the same call can get past a moment later: a connection refused, reset or
 * timed out, a name that did not resolve, throttling, a 5xx. The AWS SDK's own classification (the errors its retry
 * strategy retries), so the stages retry what the SDK would, for longer than the SDK does.
 */
export function isTransientServiceError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const e = err as Parameters<typeof isTransientError>[0];
  return isTransientError(e) || isThrottlingError(e) || isServerError(e);
}

/** One line naming what went wrong, for a dead-letter reason or run.json. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
