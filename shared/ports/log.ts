// The logging interface stages use: Powertools' Logger satisfies it on Lambda; the embedded runtime writes
// JSON lines to the run's log file so the progress display stays clean.
export interface Log {
  debug(message: string, extra?: Record<string, unknown>): void;
  info(message: string, extra?: Record<string, unknown>): void;
  warn(message: string, extra?: Record<string, unknown>): void;
  error(message: string, extra?: Record<string, unknown>): void;
}

export const silentLog: Log = { debug() {}, info() {}, warn() {}, error() {} };

/** A Log writing one JSON object per line through `write` (a file stream, stderr). */
export function jsonLinesLog(write: (line: string) => void, base: Record<string, unknown> = {}): Log {
  const emit = (level: string) => (message: string, extra?: Record<string, unknown>) =>
    write(`${JSON.stringify({ time: new Date().toISOString(), level, message, ...base, ...extra })}\n`);
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
}
