// `toolrl sandbox serve`: the built-in Python sandbox behind SandboxFusion's `/run_code` API.
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';

/** The token's variable: keeps it out of the process list, where `--token` shows. */
const TOKEN_VAR = 'TOOLRL_SANDBOX_TOKEN';

export function register(program: Command): void {
  const sandbox = program.command('sandbox').description('The built-in code sandbox');
  sandbox
    .command('serve')
    .description("Serve the sandbox with SandboxFusion's /run_code API (prints the URL)")
    .option('--port <n>', 'port (0 picks a free one)', '0')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--isolation <mode>', 'auto, bwrap or process', 'auto')
    .option('--python <path>', 'interpreter to run (default: the system python3)')
    .option('--concurrency <n>', 'runs at once (default: the number of CPUs)')
    // Default maxima: room for ReTool-style programs (verl's and MindSpeed-RL's configs ask 30 s and 1024 MB)
    // with a bound on what one request may hold.
    .option(
      '--max-timeout <seconds>',
      "the most a request's run_timeout may ask (longer asks are clamped to it); a request without one gets 10 s",
      '300',
    )
    .option(
      '--max-memory-mb <MB>',
      "the most a request's memory_limit_MB may ask (clamped to it); a request without one gets this",
      '4096',
    )
    .option(
      '--token <token>',
      `require "Authorization: Bearer <token>" on every request (default: $${TOKEN_VAR} when set)`,
    )
    .option(
      '--allowed-host <name...>',
      'host names clients reach the server by, besides loopback and the bound address',
    )
    .action(
      async (opts: {
        port: string;
        host: string;
        isolation: string;
        python?: string;
        concurrency?: string;
        maxTimeout: string;
        maxMemoryMb: string;
        token?: string;
        allowedHost?: string[];
      }) => {
        const port = Number(opts.port);
        if (!Number.isInteger(port) || port < 0 || port > 65535)
          throw new UsageError(`--port must be 0..65535, not ${opts.port}`);
        if (!['auto', 'bwrap', 'process'].includes(opts.isolation))
          throw new UsageError(`--isolation must be auto, bwrap or process, not ${opts.isolation}`);
        const concurrency = opts.concurrency === undefined ? undefined : Number(opts.concurrency);
        if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency > 0))
          throw new UsageError(`--concurrency must be a positive integer, not ${opts.concurrency}`);
        const maxTimeout = Number(opts.maxTimeout);
        if (!(Number.isFinite(maxTimeout) && maxTimeout > 0))
          throw new UsageError(`--max-timeout must be a positive number of seconds, not ${opts.maxTimeout}`);
        const maxMemoryMb = Number(opts.maxMemoryMb);
        if (!(Number.isInteger(maxMemoryMb) && maxMemoryMb > 0))
          throw new UsageError(`--max-memory-mb must be a positive integer, not ${opts.maxMemoryMb}`);
        const { PythonSandbox } = await import('#shared/tools/code/sandbox');
        const { findPython } = await import('#shared/tools/code/isolation');
        const { serveSandbox } = await import('#shared/tools/code/server');
        const { serveUntilSignal } = await import('#shared/tools/serve');
        const box = new PythonSandbox({
          isolation: opts.isolation as 'auto' | 'bwrap' | 'process',
          python: opts.python,
          // The server's maxima; each request runs under its own run_timeout and memory_limit_MB up to them, its
          // CPU time bounded by its own run_timeout (the sandbox takes the smaller).
          limits: { wallS: maxTimeout, cpuS: maxTimeout, memoryMb: maxMemoryMb },
        });
        let isolation: string;
        try {
          isolation = box.isolation;
          findPython(opts.python);
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        const token = opts.token ?? (process.env[TOKEN_VAR] || undefined);
        const { isLoopbackBind } = await import('#shared/tools/serve');
        if (!isLoopbackBind(opts.host))
          process.stderr.write(
            `toolrl sandbox: warning: bound to ${opts.host}, not loopback: anyone who can reach this port runs ` +
              `code here as ${userInfo().username}` +
              (token ? '' : `; pass --token (or set ${TOKEN_VAR}) so that only your clients can`) +
              '\n',
          );
        const server = await serveSandbox(box, {
          host: opts.host,
          port,
          concurrency,
          token,
          allowedHosts: opts.allowedHost,
        });
        await serveUntilSignal(
          server,
          `toolrl sandbox: ${server.url}/run_code (isolation: ${isolation}; run_timeout up to ${maxTimeout} s, ` +
            `memory_limit_MB up to ${maxMemoryMb})`,
          () => box.close(),
        );
      },
    );
}
