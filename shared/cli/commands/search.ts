// `toolrl search serve`: the built-in retrieval service (Search-R1's `/retrieve`) over a local corpus.
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';

export function register(program: Command): void {
  const search = program.command('search').description('The built-in retrieval service for the search tool');
  search
    .command('serve')
    .description("Serve a JSONL corpus with Search-R1's /retrieve API (prints the URL)")
    .option(
      '--corpus <file>',
      'JSONL corpus ({"id", "contents"} per line); default: the shipped sample corpus',
    )
    .option('--port <n>', 'port (0 picks a free one)', '0')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--topk <k>', 'passages per query when the request gives no topk', '3')
    .action(async (opts: { corpus?: string; port: string; host: string; topk: string }) => {
      const { loadCorpus, SAMPLE_CORPUS_PATH } = await import('#shared/tools/search/corpus');
      const { PassageIndex } = await import('#shared/tools/search/index');
      const { serveRetrieval } = await import('#shared/tools/search/server');
      const { serveUntilSignal } = await import('#shared/tools/serve');
      const port = Number(opts.port);
      const topk = Number(opts.topk);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new UsageError(`--port must be 0..65535, not ${opts.port}`);
      if (!Number.isInteger(topk) || topk < 1)
        throw new UsageError(`--topk must be a positive integer, not ${opts.topk}`);
      let index: InstanceType<typeof PassageIndex>;
      try {
        index = new PassageIndex(loadCorpus(opts.corpus ?? SAMPLE_CORPUS_PATH));
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const server = await serveRetrieval(index, { host: opts.host, port, topk });
      await serveUntilSignal(server, `toolrl search: ${index.size} passages at ${server.url}/retrieve`);
    });
}
