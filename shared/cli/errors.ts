// Misuse of a command (bad flags, unreadable input file): the CLI prints the message and exits 2.
export class UsageError extends Error {
  override name = 'UsageError';
}
