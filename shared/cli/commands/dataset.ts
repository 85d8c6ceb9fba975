// `toolrl dataset inspect|validate|convert|templates`: look at, check, and make training datasets
// (verl's Parquet row format).
import { existsSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson } from '../io.ts';

const int = (flag: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${flag} expects a non-negative integer, got ${v}`);
  return n;
};

function requireFile(path: string): void {
  if (!existsSync(path)) throw new UsageError(`no such file: ${path}`);
}

async function tokenCounter(dir: string | undefined) {
  if (!dir) return undefined;
  const { loadTokenCounter } = await import('#shared/data/tokens');
  try {
    return await loadTokenCounter(dir);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

const fmt = (p: { p50: number; p90: number; p99: number; max: number } | null | undefined) =>
  p ? `p50 ${p.p50}  p90 ${p.p90}  p99 ${p.p99}  max ${p.max}` : 'n/a';

export function register(program: Command): void {
  const dataset = program
    .command('dataset')
    .description('Inspect, validate and convert training datasets (Parquet)');

  dataset
    .command('inspect')
    .description('Row count, columns, data sources, prompt lengths and a sample row of a Parquet file')
    .argument('<file>', 'Parquet file')
    .option('--json', 'print one JSON object {"rows", "columns", "data_sources", ...}')
    .option('--tokenizer <dir>', 'Hugging Face tokenizer folder: also give prompt lengths in tokens')
    .action(async (file: string, opts: { json?: boolean; tokenizer?: string }) => {
      requireFile(file);
      const { inspectDataset } = await import('#shared/data/inspect');
      const { DatasetError } = await import('#shared/data/dataset');
      const countTokens = await tokenCounter(opts.tokenizer);
      const result = await inspectDataset(file, { countTokens }).catch((err) => {
        throw err instanceof DatasetError ? new UsageError(err.message) : err;
      });
      if (opts.json) return printJson(result);
      const sources = Object.entries(result.data_sources)
        .map(([k, v]) => `${k} (${v})`)
        .join(', ');
      const lines = [
        `${file}: ${result.rows} rows`,
        `columns:         ${result.columns.join(', ')}`,
        `data sources:    ${sources || 'none'}`,
        `prompt chars:    ${fmt(result.prompt_chars)}`,
        ...(result.prompt_tokens !== undefined ? [`prompt tokens:   ${fmt(result.prompt_tokens)}`] : []),
        `prompt messages: ${fmt(result.prompt_messages)}`,
        `rows with tools: ${result.rows_with_tools}`,
        `sample row:      ${JSON.stringify(result.sample, null, 2)}`,
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });

  dataset
    .command('validate')
    .description(
      'Check every row against the dataset schema; list each problem with its row number (exit 1 if any)',
    )
    .argument('<file>', 'Parquet file')
    .option('--json', 'print {"ok", "rows", "problems": [{"row", "message"}], ...}')
    .option(
      '--max-prompt-length <n>',
      'prompts longer than this many tokens are problems (needs --tokenizer)',
      int('--max-prompt-length'),
    )
    .option('--tokenizer <dir>', 'Hugging Face tokenizer folder for prompt lengths')
    .action(async (file: string, opts: { json?: boolean; maxPromptLength?: number; tokenizer?: string }) => {
      requireFile(file);
      if (opts.maxPromptLength !== undefined && !opts.tokenizer) {
        throw new UsageError('--max-prompt-length needs --tokenizer DIR to count tokens');
      }
      const { validateDataset } = await import('#shared/data/validate');
      const { formatProblem } = await import('#shared/data/dataset');
      const countTokens = await tokenCounter(opts.tokenizer);
      const result = await validateDataset(file, { maxPromptLength: opts.maxPromptLength, countTokens });
      if (opts.json) printJson(result);
      else if (result.ok) process.stdout.write(`${file}: ${result.rows} rows, ok\n`);
      else {
        const lines = result.problems.map((p) => `${file}: ${formatProblem(p)}`);
        process.stdout.write(
          `${lines.join('\n')}\n${file}: ${result.problems.length} problem(s) in ${result.rows} rows\n`,
        );
      }
      if (!result.ok) process.exitCode = 1;
    });

  const convert = dataset
    .command('convert')
    .description('Convert jsonl, toolbench, math, qa or bfcl input into a Parquet dataset')
    .requiredOption('--from <format>', 'jsonl | toolbench | math | qa | bfcl')
    .argument('[input]', 'input file (BFCL: a file or a folder of BFCL_v3_multi_turn_*.json)')
    .option('--out <file>', 'output Parquet file (the training split with --split)')
    .option('--split', 'split into train (--out) and validation (--val-out) files')
    .option('--train-ratio <r>', 'fraction of rows for training with --split', '0.9')
    .option('--val-out <file>', 'validation Parquet file (with --split)')
    .option('--max-samples <n>', 'keep only the first N rows of the input', int('--max-samples'))
    .option('--seed <s>', 'seed of the --split shuffle', int('--seed'), 0)
    .option('--data-source <name>', "set every row's data_source (default: per format)")
    .option(
      '--prompt-type <name|file>',
      'apply a prompt template (toolcall, retool, search, or a .yaml path)',
    )
    .option('--answers <file>', 'BFCL possible-answer file (default: possible_answer/<input name>)')
    .option(
      '--category <name>',
      'ToolBench: category of rows whose data names none (ToolLLaMA conversations), so a StableToolBench server can route their calls',
    )
    .option(
      '--bfcl-python <path>',
      "BFCL: Python with bfcl-eval, which adds the classes' function docs to raw entries (default: TOOLRL_BFCL_PYTHON, else the `toolrl bfcl setup` environment)",
    )
    .option(
      '--call-format <format>',
      'ToolBench queries: hermes (tools for the chat template, <tool_call> calls) or react (the tools listed in a ToolLLaMA-style system prompt, Thought/Action/Action Input; train with tool_parser_format: react)',
      'hermes',
    )
    .option('--json', 'print the summary as JSON');
  // The seed converters' spellings (convert_toolbench_to_verl.py: --input, --output, --train_ratio, --max_samples,
  // --train_output, --val_output), accepted as they are.
  for (const [flag, what] of [
    ['--input <file>', "input file (the seed converters' --input)"],
    ['--output <file>', 'as --out'],
    ['--train_ratio <r>', 'as --train-ratio'],
    ['--max_samples <n>', 'as --max-samples'],
    ['--train_output <file>', 'as --out with --split'],
    ['--val_output <file>', 'as --val-out'],
  ] as const)
    convert.addOption(new Option(flag, what).hideHelp());
  convert.action(
    async (positional: string | undefined, opts: Record<string, string | number | boolean | undefined>) => {
      const seedFlag = (ours: string, theirs: string, a: unknown, b: unknown): unknown => {
        if (a !== undefined && b !== undefined && a !== b)
          throw new UsageError(`${ours} and ${theirs} give different values; give one`);
        return a ?? b;
      };
      const input = seedFlag('the input argument', '--input', positional, opts.input) as string | undefined;
      if (!input) throw new UsageError('name the input file (an argument, or --input FILE)');
      opts.out = seedFlag('--out', '--output / --train_output', opts.out, opts.output ?? opts.train_output) as
        | string
        | undefined;
      if (!opts.out) throw new UsageError('name the output Parquet file with --out FILE');
      opts.valOut = seedFlag('--val-out', '--val_output', opts.valOut, opts.val_output) as string | undefined;
      if (opts.train_ratio !== undefined) opts.trainRatio = opts.train_ratio;
      if (opts.max_samples !== undefined) opts.maxSamples = int('--max_samples')(String(opts.max_samples));
      if (!['hermes', 'react'].includes(String(opts.callFormat)))
        throw new UsageError(`--call-format must be hermes or react, not ${opts.callFormat}`);
      const trainRatio = Number(opts.trainRatio);
      if (!(trainRatio > 0 && trainRatio < 1))
        throw new UsageError(`--train-ratio must be in (0, 1), got ${opts.trainRatio}`);
      if (opts.maxSamples === 0) throw new UsageError('--max-samples must be at least 1');
      await import('#shared/bfcl/register-converter'); // `--from bfcl`
      const { convertDataset } = await import('#shared/data/convert');
      const { toolrlName } = await import('#shared/config/resolve');
      const { InputError } = await import('#shared/data/records');
      let summary: Awaited<ReturnType<typeof convertDataset>>;
      try {
        summary = convertDataset({
          from: String(opts.from),
          input,
          out: String(opts.out),
          split: Boolean(opts.split),
          trainRatio,
          valOut: opts.valOut as string | undefined,
          maxSamples: opts.maxSamples as number | undefined,
          seed: opts.seed as number,
          dataSource: opts.dataSource as string | undefined,
          promptType:
            opts.promptType === undefined ? undefined : toolrlName.promptType(String(opts.promptType)),
          answers: opts.answers as string | undefined,
          bfclPython: opts.bfclPython as string | undefined,
          category: opts.category as string | undefined,
          callFormat: opts.callFormat as 'hermes' | 'react',
        });
      } catch (err) {
        if (err instanceof InputError) {
          process.stderr.write(`toolrl: ${err.message}\ntoolrl: nothing was written\n`);
          process.exitCode = 1;
          return;
        }
        throw err;
      }
      if (opts.json) return printJson(summary);
      const val = summary.val_out ? `, ${summary.val_rows} rows -> ${summary.val_out}` : '';
      const notes = summary.notes.map((n) => `note: ${n}\n`).join('');
      process.stdout.write(`${notes}${summary.format}: ${summary.rows} rows -> ${summary.out}${val}\n`);
    },
  );

  dataset
    .command('templates')
    .description('List the built-in prompt templates, or print one to copy and edit')
    .argument('[name]', 'template to print (toolcall, retool, search)')
    .action(async (name: string | undefined) => {
      const { listPromptTemplates, loadPromptTemplate } = await import('#shared/data/prompts/templates');
      const { toolrlName } = await import('#shared/config/resolve');
      const { readFileSync } = await import('node:fs');
      const all = listPromptTemplates();
      if (name) name = toolrlName.promptType(name);
      if (!name) {
        for (const { template, path } of all)
          process.stdout.write(`${template.name.padEnd(10)} ${template.description}\n  ${path}\n`);
        return;
      }
      try {
        loadPromptTemplate(name);
      } catch (err) {
        throw new UsageError((err as Error).message);
      }
      const found = all.find(({ template }) => template.name === loadPromptTemplate(name).name)!;
      process.stdout.write(readFileSync(found.path, 'utf8'));
    });
}
