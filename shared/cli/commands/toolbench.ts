// `toolrl toolbench serve --cache DIR`: a StableToolBench-compatible `/virtual` server over a response cache.
import { statSync } from 'node:fs';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';

export function register(program: Command): void {
  const toolbench = program.command('toolbench').description('ToolBench tools (StableToolBench-compatible)');
  toolbench
    .command('serve')
    .description("Serve cached ToolBench API responses with StableToolBench's /virtual API (prints the URL)")
    .requiredOption('--cache <dir>', 'StableToolBench cache: DIR/{category}/{tool}_for_{category}/{api}.json')
    .option('--port <n>', 'port (0 picks a free one)', '0')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .action(async (opts: { cache: string; port: string; host: string }) => {
      const port = Number(opts.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new UsageError(`--port must be 0..65535, not ${opts.port}`);
      if (!statSync(opts.cache, { throwIfNoEntry: false })?.isDirectory())
        throw new UsageError(`--cache ${opts.cache} is not a directory`);
      const { ToolBenchCache, serveToolBench } = await import('#shared/tools/toolbench/server');
      const { serveUntilSignal } = await import('#shared/tools/serve');
      const server = await serveToolBench(new ToolBenchCache(opts.cache), { host: opts.host, port });
      await serveUntilSignal(server, `toolrl toolbench: ${server.url}/virtual (cache: ${opts.cache})`);
    });
}
