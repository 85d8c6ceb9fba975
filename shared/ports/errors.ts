// Failure kinds a stage, or a port (a queue refusing an oversized message), can raise. A permanent error will
// fail the same way on every retry: its message goes to the dead-letter queue at once with the reason, instead
// of burning maxReceiveCount retries.
export class PermanentError extends Error {
  override name = 'PermanentError';
}

/** The message could not be parsed against its schema (or its claim check did not verify). */
export class BadMessageError extends PermanentError {
  override name = 'BadMessageError';
}

export const isPermanent = (err: unknown): err is PermanentError => err instanceof PermanentError;

/** One line naming what went wrong, for a dead-letter reason or run.json. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
