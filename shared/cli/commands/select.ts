// `toolrl select RUN_DIR --data FILE`: choose a run's final policy on a dev split (the validated version with the
// highest accuracy on FILE), written to RUN_DIR/metrics/select.json; shared/runtime/select.ts.
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { positiveInt } from './eval.ts';

interface SelectFlags {
  data: string;
  versions?: number[];
  n?: number;
  threads?: number;
  json?: boolean;
}

const versionList = (raw: string): number[] =>
  raw.split(',').map((part) => {
    const v = part.trim().replace(/^v/, '');
    if (!/^\d+$/.test(v))
      throw new UsageError(`--versions takes versions such as 12,24 or v12,v24, got ${JSON.stringify(raw)}`);
    return Number(v);
  });

const pct = (x: number | null) => (x === null ? '-' : `${(100 * x).toFixed(1)}%`);

export function register(program: Command): void {
  program
    .command('select')
    .description(
      "Choose a run's final policy on a dev split: of the versions validated after v0, the one with the highest accuracy on it (TRL's load_best_model_at_end)",
    )
    .argument('<run-dir>', 'the run folder (<workdir>/runs/<runId>)')
    .requiredOption(
      '--data <file>',
      'the dev data: a dataset the run neither trained nor validated on (Parquet rows, as toolrl eval reads)',
    )
    .option(
      '--versions <list>',
      'only these validated versions, e.g. 0,12,24 (default: every version validated after v0 whose bundle is kept)',
      versionList,
    )
    .option('--n <k>', 'samples per prompt (default: rollout.val_kwargs.n)', positiveInt('n'))
    .option('--threads <n>', 'ONNX Runtime threads (default: all cores)', positiveInt('threads'))
    .option('--json', 'print the selection as JSON on stdout')
    .action(async (runDir: string, o: SelectFlags) => {
      const { selectPolicy, SelectError } = await import('#shared/runtime/select');
      const { BundleError } = await import('#shared/policy/bundle');
      const selection = await selectPolicy({
        runDir,
        dataPath: o.data,
        ...(o.versions ? { versions: o.versions } : {}),
        ...(o.n !== undefined ? { n: o.n } : {}),
        ...(o.threads !== undefined ? { ortThreads: o.threads } : {}),
        onCandidate: (v, s) => {
          if (!o.json) process.stderr.write(`v${v}: ${pct(s.accuracy)} on ${o.data}\n`);
        },
      }).catch((err: unknown) => {
        if (err instanceof SelectError || err instanceof BundleError) throw new UsageError(err.message);
        throw err;
      });
      if (o.json) {
        process.stdout.write(`${JSON.stringify(selection)}\n`);
        return;
      }
      const out = process.stdout;
      out.write(`version  ${o.data} (mean@${selection.samplesPerPrompt})  run's validation\n`);
      for (const c of selection.candidates)
        out.write(
          `v${String(c.version).padEnd(7)}  ${pct(c.accuracy).padStart(6)}${' '.repeat(Math.max(1, o.data.length + 6))}${pct(c.valAccuracy).padStart(6)}${c.version === selection.chosen ? '  <- chosen' : ''}\n`,
        );
      out.write(
        `chosen: v${selection.chosen} (${runDir.replace(/\/$/, '')}/policy/v${selection.chosen}); written to ${runDir.replace(/\/$/, '')}/metrics/select.json\n`,
      );
    });
}
