// Small helpers shared by the commands: read stdin, print JSON, read a JSON/YAML file with a clear error.
import { ConfigFileError, readConfigFile } from '#shared/tools/config';
import { UsageError } from './errors.ts';

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Reads a .json, .yaml or .yml file; a missing or malformed file is a UsageError naming it. */
export function readStructuredFile(path: string): unknown {
  try {
    return readConfigFile(path);
  } catch (err) {
    throw err instanceof ConfigFileError ? new UsageError(err.message) : err;
  }
}
