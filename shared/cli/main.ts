// Entry of the `toolrl` command. Each file in ./commands registers one command group; heavy modules are
// imported inside the actions so `toolrl --help` stays fast.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, CommanderError } from 'commander';
import { ConfigFileError } from '#shared/tools/config';
import { UsageError } from './errors.ts';

export interface CommandModule {
  register(program: Command): void;
}

async function buildProgram(): Promise<Command> {
  const program = new Command('toolrl')
    .description('Train language models to use tools over many turns with RL (GRPO, PPO).')
    .showHelpAfterError()
    .exitOverride();
  const dir = join(dirname(fileURLToPath(import.meta.url)), 'commands');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .sort();
  for (const file of files) {
    const mod = (await import(pathToFileURL(join(dir, file)).href)) as CommandModule;
    mod.register(program);
  }
  return program;
}

async function main(argv: string[]): Promise<number> {
  const program = await buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    // A config file the user named that cannot be read is misuse too, wherever below the CLI it was read.
    if (err instanceof UsageError || err instanceof ConfigFileError) {
      process.stderr.write(`toolrl: ${err.message}\n`);
      return 2;
    }
    process.stderr.write(`toolrl: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv);
