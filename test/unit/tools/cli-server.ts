// Starts a `toolrl ... serve` command as a real process on port 0 and returns the URL it prints.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { HANG_MS } from '../../helpers/hang.ts';

export const TOOLRL = fileURLToPath(new URL('../../../bin/toolrl.mjs', import.meta.url));

export interface CliServer {
  url: string;
  child: ChildProcess;
  /** What the process wrote to stdout so far. */
  stdout(): string;
  /** What the process wrote to stderr so far. */
  stderr(): string;
  stop(): Promise<void>;
}

export function startCliServer(args: string[]): Promise<CliServer> {
  const child = spawn(process.execPath, [TOOLRL, ...args, '--port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL'); // never leave a server behind when the test gives up on it
      reject(new Error(`no URL from toolrl ${args.join(' ')} in ${HANG_MS / 1000} s: ${err}`));
    }, HANG_MS);
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
    });
    child.on('exit', (code) => reject(new Error(`toolrl ${args.join(' ')} exited ${code}: ${err}`)));
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /(http:\/\/(?:127\.0\.0\.1|0\.0\.0\.0):\d+\/\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve({
        url: m[1]!,
        child,
        stdout: () => out,
        stderr: () => err,
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once('exit', () => done());
            child.kill('SIGTERM');
          }),
      });
    });
  });
}
