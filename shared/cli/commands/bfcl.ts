// `toolrl bfcl setup|dataset|eval`: the Python environment that runs BFCL's own environments and checker, BFCL
// multi-turn entries as training rows, and a policy's score on them with BFCL's checker (greedy).
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson } from '../io.ts';

const positiveInt = (flag: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${flag} must be a positive integer, got ${v}`);
  return n;
};

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;

interface DatasetFlags {
  out: string;
  categories?: string[];
  ids?: string[];
  limit?: number;
  split?: boolean;
  trainRatio?: string;
  valOut?: string;
  seed?: string;
  promptType?: string;
  python?: string;
}

interface EvalFlags {
  policy: string;
  data: string;
  maxSamples?: number;
  maxNewTokens?: number;
  maxTurns?: number;
  maxToolCalls?: number;
  maxTotalResponseLength?: number;
  threads?: number;
  python?: string;
  json?: boolean;
}

export function register(program: Command): void {
  const bfcl = program
    .command('bfcl')
    .description("BFCL multi-turn: environment setup, training rows, and evaluation with BFCL's checker");

  bfcl
    .command('setup')
    .description('Create the Python environment for bfcl-eval (pinned, without its declared dependencies)')
    .option('--relock', 'recompile shared/bfcl/requirements.lock from requirements.in first')
    .option('--json', 'print {"python", "created", "bfclEval", "classes"}')
    .action(async (o: { relock?: boolean; json?: boolean }) => {
      const { ensureBfclEnv, relockBfclEnv } = await import('#shared/bfcl/env');
      const { BfclEnv } = await import('#shared/bfcl/client');
      if (o.relock) await relockBfclEnv();
      const info = await ensureBfclEnv();
      const env = new BfclEnv({ python: info.python });
      try {
        const hello = await env.hello();
        if (o.json) return printJson({ ...info, bfclEval: hello.bfclEval, classes: hello.classes });
        process.stdout.write(
          `bfcl-eval ${hello.bfclEval} on Python ${hello.python}: ${info.python}${info.created ? ' (created)' : ''}\n`,
        );
      } finally {
        await env.close();
      }
    });

  bfcl
    .command('dataset')
    .description(
      "BFCL multi-turn entries (as BFCL's loader prepares them) with ground truth, as Parquet rows",
    )
    .requiredOption('--out <file>', 'output Parquet file (the training split with --split)')
    .option(
      '--categories <list>',
      'comma-separated: base, miss_func, miss_param, long_context (default: all)',
      list,
    )
    .option('--ids <list>', 'comma-separated entry ids (e.g. multi_turn_base_0)', list)
    .option('--limit <n>', 'the first N entries of each category', positiveInt('--limit'))
    .option('--split', 'split into train (--out) and validation (--val-out) files')
    .option('--train-ratio <r>', 'fraction of rows for training with --split', '0.9')
    .option('--val-out <file>', 'validation Parquet file (with --split)')
    .option('--seed <s>', 'seed of the --split shuffle', '0')
    .option('--prompt-type <name>', 'prompt template applied to every row (see `toolrl dataset templates`)')
    .option(
      '--python <path>',
      'a Python with bfcl-eval installed (default: the one `toolrl bfcl setup` makes)',
    )
    .action(async (o: DatasetFlags) => {
      if (o.split && !o.valOut) throw new UsageError('--split needs --val-out FILE');
      const { writeBfclDataset } = await import('#shared/bfcl/dataset');
      const { toolrlName } = await import('#shared/config/resolve');
      const { InputError } = await import('#shared/data/records');
      try {
        const summary = await writeBfclDataset({
          out: o.out,
          categories: o.categories,
          ids: o.ids,
          limit: o.limit,
          python: o.python,
          split: o.split,
          trainRatio: Number(o.trainRatio),
          valOut: o.valOut,
          seed: Number(o.seed),
          promptType: o.promptType === undefined ? undefined : toolrlName.promptType(o.promptType),
        });
        printJson(summary);
      } catch (err) {
        if (
          err instanceof InputError ||
          /unknown BFCL category|no entry with id/.test((err as Error).message)
        )
          throw new UsageError((err as Error).message);
        throw err;
      }
    });

  bfcl
    .command('eval')
    .description("Score a policy on BFCL multi-turn rows with BFCL's checker (greedy decoding)")
    .requiredOption('--policy <dir>', 'rollout bundle folder (a run writes them under runs/<id>/policy/v<N>)')
    .requiredOption('--data <file>', 'Parquet of BFCL rows (`toolrl bfcl dataset`)')
    .option('--max-samples <n>', 'the first N rows only', positiveInt('--max-samples'))
    .option(
      '--max-new-tokens <n>',
      'token budget per assistant turn (default 512)',
      positiveInt('--max-new-tokens'),
    )
    .option('--max-turns <n>', 'assistant turns per entry (default 40)', positiveInt('--max-turns'))
    .option('--max-tool-calls <n>', 'tool calls per entry (default 80)', positiveInt('--max-tool-calls'))
    .option(
      '--max-total-response-length <n>',
      'generated + appended tokens per entry (default 8192)',
      positiveInt('--max-total-response-length'),
    )
    .option('--threads <n>', 'onnxruntime intra-op threads (default: all cores)', positiveInt('--threads'))
    .option(
      '--python <path>',
      'a Python with bfcl-eval installed (default: the one `toolrl bfcl setup` makes)',
    )
    .option('--json', 'print {"entries", "accuracy", "progress", "byCategory", "results": [...]} on stdout')
    .action(async (o: EvalFlags) => {
      if (!existsSync(o.data)) throw new UsageError(`no such file: ${o.data}`);
      const { BundleError } = await import('#shared/policy/bundle');
      const { evaluateBfcl } = await import('#shared/bfcl/evaluate');
      const multiTurn = {
        ...(o.maxTurns ? { max_turns: o.maxTurns } : {}),
        ...(o.maxToolCalls ? { max_tool_calls: o.maxToolCalls } : {}),
        ...(o.maxTotalResponseLength ? { max_total_response_length: o.maxTotalResponseLength } : {}),
      };
      let summary: Awaited<ReturnType<typeof evaluateBfcl>>;
      try {
        summary = await evaluateBfcl({
          policy: o.policy,
          data: o.data,
          maxSamples: o.maxSamples,
          maxNewTokens: o.maxNewTokens,
          threads: o.threads,
          python: o.python,
          multiTurn,
          onEntry: (r, done, total) =>
            process.stderr.write(
              `[${done}/${total}] ${r.id}: ${r.success ? 'pass' : 'fail'}, ${r.turnsPassed}/${r.turnsChecked} turns (${r.finishReason})\n`,
            ),
        });
      } catch (err) {
        if (err instanceof BundleError) throw new UsageError(err.message);
        throw err;
      }
      if (o.json) return printJson(summary);
      const lines = [
        `${summary.entries} entries in ${summary.seconds.toFixed(1)}s: accuracy ${pct(summary.accuracy)}, progress ${pct(summary.progress)}`,
        ...Object.entries(summary.byCategory).map(
          ([c, s]) =>
            `  ${c.padEnd(28)} ${String(s.entries).padStart(4)}  accuracy ${pct(s.accuracy)}  progress ${pct(s.progress)}`,
        ),
      ];
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
