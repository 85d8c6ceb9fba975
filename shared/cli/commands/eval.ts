// `toolrl eval --policy DIR --data FILE`: score a policy (a rollout bundle such as runs/<id>/policy/v<N>, or a
// checkpoint / Hugging Face model folder) on a dataset with a run's tools and reward: accuracy (mean@k), pass@k,
// reward and its components, tool calls per answer, valid-call rate, why episodes ended.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import type { LoopStats } from '#shared/policy/decode-loop';
import { UsageError } from '../errors.ts';

interface EvalFlags {
  policy: string;
  data: string;
  config?: string;
  n?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  seed?: number;
  tools: boolean;
  maxRows?: number;
  threads?: number;
  out?: string;
  json?: boolean;
}

const number =
  (flag: string, check: (v: number) => boolean, what: string) =>
  (raw: string): number => {
    const v = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(v) || !check(v))
      throw new UsageError(`--${flag} must be ${what}, got ${JSON.stringify(raw)}`);
    return v;
  };
/** A commander parser for `--<flag>`'s value: a positive integer, or a UsageError naming the flag. */
export const positiveInt = (flag: string) =>
  number(flag, (v) => Number.isInteger(v) && v > 0, 'a positive integer');

export function register(program: Command): void {
  program
    .command('eval')
    .description(
      "Score a policy on a dataset with a run's tools and reward (accuracy mean@k, pass@k, tool use)",
    )
    .requiredOption(
      '--policy <dir>',
      "rollout bundle (runs/<id>/policy/v<N>), checkpoint (runs/<id>/checkpoints/step-<S>: exported as --config's model.rollout_quantization says, under the version it was current at) or model folder",
    )
    .requiredOption('--data <file>', 'dataset (Parquet rows: prompt, data_source, reward_model, extra_info)')
    .option(
      '--config <file>',
      "run config whose tools, reward and multi-turn limits apply (default: the run's, when the policy is in a run folder)",
    )
    .option('--n <k>', 'samples per prompt (default: rollout.val_kwargs.n)', positiveInt('n'))
    .option(
      '--temperature <t>',
      'sampling temperature; 0 is greedy (default: rollout.val_kwargs.temperature)',
      number('temperature', (v) => v >= 0, 'a number >= 0'),
    )
    .option(
      '--top-p <p>',
      'nucleus mass in (0, 1]',
      number('top-p', (v) => v > 0 && v <= 1, 'in (0, 1]'),
    )
    .option(
      '--top-k <k>',
      'keep the k most likely tokens; 0 disables',
      number('top-k', Number.isInteger, 'an integer'),
    )
    .option(
      '--seed <s>',
      'rollout seed (default: rollout.seed)',
      number('seed', Number.isInteger, 'an integer'),
    )
    .option('--no-tools', 'offer no tools (the prompt lists none; calls the model still writes fail)')
    .option('--max-rows <n>', 'only the first n rows', positiveInt('max-rows'))
    .option('--threads <n>', 'ONNX Runtime threads (default: all cores)', positiveInt('threads'))
    .option(
      '--out <dir>',
      'keep every answer (messages, tool calls, reward) in DIR/runs/<runId>/ for `toolrl view` and your own analysis',
    )
    .option('--json', 'print the summary as JSON on stdout')
    .action(async (o: EvalFlags) => {
      const { evaluate, runConfigBeside } = await import('#shared/runtime/evaluate');
      const { formatEval, formatRollouts } = await import('#shared/runtime/progress');
      let config: Awaited<ReturnType<typeof loadConfig>>;
      if (o.config) config = await loadConfig(o.config);
      else {
        const beside = runConfigBeside(o.policy);
        if (!beside)
          throw new UsageError(
            `${o.policy} is not inside a run folder with a run.json; give the run config with --config FILE`,
          );
        config = { config: beside.config, sourceDir: beside.sourceDir };
      }
      if (o.n !== undefined && o.n > 1 && o.temperature === 0)
        throw new UsageError('--n > 1 with --temperature 0 samples the same greedy answer n times; use one');
      if (o.out !== undefined && existsSync(join(o.out, 'runs')))
        throw new UsageError(`--out ${o.out} already holds a runs/ folder: give an empty or new directory`);
      const tty = process.stderr.isTTY;
      const { BundleError } = await import('#shared/policy/bundle');
      let rollouts: LoopStats | undefined;
      const summary = await evaluate({
        policyDir: o.policy,
        dataPath: o.data,
        config: config.config,
        sourceDir: config.sourceDir,
        noTools: !o.tools,
        ...(o.n !== undefined ? { n: o.n } : {}),
        ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
        ...(o.topP !== undefined ? { topP: o.topP } : {}),
        ...(o.topK !== undefined ? { topK: o.topK } : {}),
        ...(o.seed !== undefined ? { seed: o.seed } : {}),
        ...(o.maxRows !== undefined ? { maxRows: o.maxRows } : {}),
        ...(o.threads !== undefined ? { ortThreads: o.threads } : {}),
        ...(o.out !== undefined ? { keepDir: o.out } : {}),
        onRollouts: (s) => {
          rollouts = s;
        },
        onProgress: (done, total) => {
          if (tty) process.stderr.write(`\r${done}/${total} prompts scored`);
        },
      }).catch((err: unknown) => {
        if (err instanceof BundleError) throw new UsageError(err.message);
        throw err;
      });
      if (tty) process.stderr.write('\n');
      if (o.json) {
        process.stdout.write(
          `${JSON.stringify({ policy: resolve(o.policy), data: resolve(o.data), ...summary, ...(rollouts ? { rollouts } : {}) })}\n`,
        );
        return;
      }
      const out = process.stdout;
      out.write(
        `${o.policy} on ${o.data}${o.tools ? '' : ' (no tools)'}\n  ${formatEval(summary).replace(/^v\d+: /, '')}\n`,
      );
      const comps = Object.entries(summary.components)
        .map(([k, v]) => `${k} ${v.toFixed(3)}`)
        .join(', ');
      if (comps) out.write(`  reward components: ${comps}\n`);
      const finish = Object.entries(summary.finishReasons)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      out.write(`  episodes ended by: ${finish}\n`);
      if (rollouts) out.write(`  rollouts: ${formatRollouts(rollouts)}\n`);
      if (o.out !== undefined)
        out.write(
          `  answers kept in ${join(o.out, 'runs', summary.runId)} (npx toolrl view ${summary.runId} --workdir ${o.out})\n`,
        );
    });
}

async function loadConfig(path: string) {
  const { loadRunConfig, ConfigError } = await import('#shared/config/resolve');
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    // The config's folder, so a model.chat_template file beside it is read as toolrl train reads it.
    const sourceDir = dirname(resolve(path));
    return { config: loadRunConfig(text, path, [], sourceDir).config, sourceDir };
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
}
