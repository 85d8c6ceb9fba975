// `toolrl tools list|call`: the tool registry from the command line (the contract other checks rely on).
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson, readStructuredFile } from '../io.ts';

type Truncate = { maxLength: number; side: 'left' | 'right' | 'middle'; countTokens?: (s: string) => number };

async function loadRegistry(file: string | undefined, truncate?: Truncate) {
  await import('#shared/bfcl/register-tool'); // BFCL's tool kind joins the built-ins
  const { buildToolRegistry } = await import('#shared/tools/registry');
  const { ToolConfigFileSchema } = await import('#shared/schemas/config/tools');
  if (!file) return buildToolRegistry(undefined, { truncate });
  const parsed = ToolConfigFileSchema.safeParse(readStructuredFile(file));
  if (!parsed.success)
    throw new UsageError(
      `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(file)'}: ${i.message}`).join('; ')}`,
    );
  // A verl / MindSpeed-RL tools file: its class names and config keys in toolrl's.
  const { resolveToolSpecs } = await import('#shared/config/resolve');
  try {
    const tools = resolveToolSpecs(parsed.data.tools);
    return await buildToolRegistry({ tools }, { baseDir: dirname(resolve(file)), truncate });
  } catch (err) {
    throw new UsageError(`${file}: ${(err as Error).message}`);
  }
}

export function register(program: Command): void {
  const tools = program.command('tools').description('List the configured tools or call one');
  tools
    .command('list')
    .description('Print the tools as OpenAI function schemas')
    .option(
      '--tools <file>',
      'tool config (YAML or JSON: tools: [{kind, config, tool_schema}]); default: the built-in set',
    )
    .option('--json', 'print a JSON array of OpenAI tool schemas')
    .action(async (opts: { tools?: string; json?: boolean }) => {
      const registry = await loadRegistry(opts.tools);
      try {
        if (opts.json) printJson(registry.schemas());
        else
          for (const s of registry.schemas())
            process.stdout.write(`${s.function.name.padEnd(24)} ${s.function.description.split('\n')[0]}\n`);
      } finally {
        await registry.close();
      }
    });
  tools
    .command('call')
    .description('Call one tool; a tool failure is printed as {ok: false, error} with exit code 0')
    .argument('<name>', 'tool name')
    .option('--args <json>', 'arguments as a JSON object', '{}')
    .option('--tools <file>', 'tool config (YAML or JSON); default: the built-in set')
    .option(
      '--max-length <n>',
      'truncate the output to n characters, or n tokens with --tokenizer (max_tool_response_length)',
    )
    .option(
      '--truncate-side <side>',
      "left keeps the start, right the end, middle both ends (tool_response_truncate_side, verl's convention)",
      'middle',
    )
    .option(
      '--tokenizer <dir>',
      'count --max-length in tokens of this tokenizer (a rollout bundle or model folder with tokenizer.json)',
    )
    .option(
      '--create-kwargs <json>',
      "a stateful (Python) tool's create_kwargs, as a row's extra_info.tools_kwargs.<tool>.create_kwargs gives them",
    )
    .option(
      '--json',
      'print {"ok", "output", "error", "truncated"} (+ "reward", "metrics", "toolReward" for a stateful tool)',
    )
    .action(
      async (
        name: string,
        opts: {
          args: string;
          tools?: string;
          maxLength?: string;
          truncateSide: string;
          tokenizer?: string;
          createKwargs?: string;
          json?: boolean;
        },
      ) => {
        let createKwargs: Record<string, unknown> | undefined;
        if (opts.createKwargs !== undefined) {
          try {
            createKwargs = JSON.parse(opts.createKwargs) as Record<string, unknown>;
          } catch (err) {
            throw new UsageError(`--create-kwargs is not JSON: ${(err as Error).message}`);
          }
          if (typeof createKwargs !== 'object' || createKwargs === null || Array.isArray(createKwargs))
            throw new UsageError('--create-kwargs must be a JSON object');
        }
        if (!['left', 'right', 'middle'].includes(opts.truncateSide))
          throw new UsageError(`--truncate-side must be left, right or middle, not ${opts.truncateSide}`);
        let truncate: Truncate | undefined;
        if (opts.tokenizer !== undefined && opts.maxLength === undefined)
          throw new UsageError('--tokenizer counts --max-length in tokens: give --max-length too');
        if (opts.maxLength !== undefined) {
          const n = Number(opts.maxLength);
          if (!Number.isInteger(n) || n < 0)
            throw new UsageError(`--max-length must be a non-negative integer, not ${opts.maxLength}`);
          truncate = { maxLength: n, side: opts.truncateSide as 'left' | 'right' | 'middle' };
          if (opts.tokenizer !== undefined) {
            const { loadTokenCounter } = await import('#shared/tools/token-counter');
            try {
              truncate.countTokens = await loadTokenCounter(opts.tokenizer);
            } catch (err) {
              throw new UsageError(`--tokenizer ${opts.tokenizer}: ${(err as Error).message}`);
            }
          }
        }
        const registry = await loadRegistry(opts.tools, truncate);
        try {
          // One call is one trajectory: a stateful tool is created, executed, asked for its reward and released.
          const row = {
            trajectoryId: `cli-${process.pid}-${Date.now()}`,
            extraInfo: createKwargs ? { tools_kwargs: { [name]: { create_kwargs: createKwargs } } } : {},
          };
          // The raw string goes to the registry: malformed JSON is the tool call's error, not the command's.
          const result = await registry.forRow(row).call({ name, arguments: opts.args });
          let toolReward: number | undefined;
          if (registry.stateful) {
            const history = [{ name, arguments: opts.args, result, durationMs: 0 }];
            const end = await registry.finishTrajectory({ ...row, history });
            toolReward = end.rewards[name];
            for (const e of end.errors) process.stderr.write(`toolrl: ${e.tool}: ${e.message}\n`);
          }
          if (opts.json) printJson({ ...result, ...(toolReward !== undefined ? { toolReward } : {}) });
          else {
            const { renderToolResult } = await import('#shared/tools/render');
            process.stdout.write(`${renderToolResult(result)}\n`);
            if (result.reward !== undefined) process.stdout.write(`step reward ${result.reward}\n`);
            if (toolReward !== undefined) process.stdout.write(`tool reward ${toolReward}\n`);
          }
        } finally {
          await registry.close();
        }
      },
    );
}
