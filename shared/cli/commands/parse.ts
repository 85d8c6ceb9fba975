// `toolrl parse`: the tool-call parser from the command line — the model's text on stdin, calls out.
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson, readStdin } from '../io.ts';

export function register(program: Command): void {
  program
    .command('parse')
    .description("Parse tool calls out of a model's text read on stdin")
    .option('--format <format>', 'tool-call format (rollout.multi_turn.tool_parser_format)', 'hermes')
    .option(
      '--json',
      'print {"calls": [{name, arguments}], "errors": [{message, offset, snippet}], "content"}',
    )
    .action(async (opts: { format: string; json?: boolean }) => {
      const { getParser } = await import('#shared/parsing/registry');
      const { toolrlName } = await import('#shared/config/resolve');
      let parser: ReturnType<typeof getParser>;
      try {
        parser = getParser(toolrlName.parserFormat(opts.format));
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const result = parser.parse(await readStdin());
      if (opts.json) {
        printJson(result);
        return;
      }
      for (const call of result.calls)
        process.stdout.write(`call  ${call.name} ${JSON.stringify(call.arguments)}\n`);
      for (const error of result.errors) process.stdout.write(`error at ${error.offset}: ${error.message}\n`);
      if (result.content) process.stdout.write(`content ${JSON.stringify(result.content)}\n`);
    });
}
