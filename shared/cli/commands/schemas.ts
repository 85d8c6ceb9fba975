// `toolrl schemas print NAME`: the generated JSON Schema of a contract (what the learner validates against).
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';

export function register(program: Command): void {
  program
    .command('schemas')
    .description('Print the JSON Schema of a message or file format')
    .argument('[name]', 'scored-group, scored-group-message, policy-pointer, bundle-manifest, run-config')
    .action(async (name: string | undefined) => {
      const { EXPORTED, renderJsonSchema } = await import('#shared/codegen/json-schemas');
      if (!name) {
        process.stdout.write(`${Object.keys(EXPORTED).join('\n')}\n`);
        return;
      }
      if (!(name in EXPORTED))
        throw new UsageError(`unknown schema ${name}; one of: ${Object.keys(EXPORTED).join(', ')}`);
      process.stdout.write(renderJsonSchema(name));
    });
}
