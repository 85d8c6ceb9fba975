// `toolrl train CONFIG [key=value ...] [--max-steps N] [--workdir DIR] [--resume RUN_ID] [--learner-device cpu]
// [--print-config]`: a whole run on this machine with no server (embedded queues and blobs, handlers in-process,
// the learner as a Python subprocess, trainer.num_gpus ranks); overrides in Hydra's style, the effective config
// uploaded as the run's config.yaml.
import { join } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';

const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${name} must be a positive integer, got ${v}`);
  return n;
};

export function register(program: Command): void {
  program
    .command('train')
    .description('Train on this machine: embedded pipeline, handlers in-process, the learner as a subprocess')
    .argument('<config>', 'run config (YAML), e.g. examples/quickstart/run.yaml')
    .argument(
      '[overrides...]',
      'Hydra-style overrides: trainer.lr=1e-6 rollout.n=5 (verl paths too: actor_rollout_ref.rollout.n=5); +key=v adds, ~key removes',
    )
    .option(
      '--print-config',
      'print the effective config (overrides applied, defaults filled in) as YAML and exit',
    )
    .option('--max-steps <n>', 'stop after this many learner steps', positiveInt('--max-steps'))
    .option('--workdir <dir>', 'where runs/<runId>/ is written', '.')
    .option('--resume <runId>', 'continue an interrupted run in the workdir')
    .option(
      '--threads <n>',
      'ONNX Runtime threads per rollout session (default: half the cores, and all of them while the learner waits; the learner uses them all)',
      positiveInt('--threads'),
    )
    .option(
      '--learner-device <device>',
      'cpu: run the learner (its trainer.num_gpus ranks, FSDP2 on gloo) on CPU; cuda: on GPUs (default: GPUs when present)',
      (v: string) => {
        if (v !== 'cpu' && v !== 'cuda')
          throw new UsageError(`--learner-device must be cpu or cuda, got ${v}`);
        return v;
      },
    )
    .option('--json', 'print the final summary as JSON on stdout')
    .action(
      async (
        config: string,
        overrides: string[],
        o: {
          maxSteps?: number;
          workdir: string;
          resume?: string;
          threads?: number;
          learnerDevice?: 'cpu' | 'cuda';
          json?: boolean;
          printConfig?: boolean;
        },
      ) => {
        const { train } = await import('#shared/runtime/train');
        const { TrainProgress, formatEval, formatRollouts } = await import('#shared/runtime/progress');
        const { ConfigError } = await import('#shared/config/resolve');
        const { JournalsInUseError } = await import('#shared/adapters/embedded/journal-owner');
        const { prepareInputs } = await import('#shared/pipeline/run-inputs');
        let prepared: ReturnType<typeof prepareInputs>;
        try {
          prepared = prepareInputs(config, { overrides });
        } catch (err) {
          if (err instanceof ConfigError) throw new UsageError(err.message);
          throw err;
        }
        for (const n of prepared.notices) process.stderr.write(`note: ${n}\n`);
        if (o.printConfig) {
          const { stringify } = await import('yaml');
          process.stdout.write(stringify(prepared.config));
          return;
        }
        const stop = new AbortController();
        let interrupts = 0;
        const onSigint = () => {
          interrupts++;
          if (interrupts === 1) {
            process.stderr.write('\nstopping cleanly (the learner checkpoints); Ctrl-C again to force\n');
            stop.abort();
          } else process.exit(130);
        };
        process.on('SIGINT', onSigint);
        process.on('SIGTERM', onSigint);
        const progress = new TrainProgress(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {});
        let result: Awaited<ReturnType<typeof train>>;
        try {
          result = await train({
            configPath: config,
            overrides,
            workdir: o.workdir,
            signal: stop.signal,
            ...(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {}),
            ...(o.resume ? { resume: o.resume } : {}),
            ...(o.threads ? { ortThreads: o.threads } : {}),
            ...(o.learnerDevice ? { learnerDevice: o.learnerDevice } : {}),
            onEvent: (e) => progress.onEvent(e),
          });
        } catch (err) {
          if (err instanceof ConfigError) throw new UsageError(err.message);
          // A second `toolrl train --resume` of a run whose train is still running: its queues are taken.
          if (err instanceof JournalsInUseError) throw new UsageError(err.message);
          throw err;
        } finally {
          progress.stop();
          process.off('SIGINT', onSigint);
          process.off('SIGTERM', onSigint);
        }
        const out = process.stderr;
        const mins = `${Math.floor(result.seconds / 60)}m${Math.round(result.seconds % 60)}s`;
        const l = result.learner;
        out.write(
          `\nrun ${result.runId} ${result.status} in ${mins}${l ? ` (step ${l.step}, policy v${l.policyVersion})` : ''}\n`,
        );
        if (result.reason) out.write(`  reason: ${result.reason}\n`);
        const first = result.evals[0];
        const last = result.evals.at(-1);
        if (first) out.write(`  start  ${formatEval(first)}\n`);
        if (last && last !== first) out.write(`  end    ${formatEval(last)}\n`);
        const chosen = result.selection;
        if (chosen) {
          const dev = chosen.candidates
            .map((c) => `v${c.version} ${(100 * c.accuracy).toFixed(1)}%`)
            .join(', ');
          const val = result.evals.find((e) => e.policyVersion === chosen.chosen);
          out.write(
            `  final  v${chosen.chosen}, the best on data.dev (${dev}; ${join(result.runDir, 'metrics', 'select.json')})${val && val !== last ? `\n         ${formatEval(val)}` : ''}\n`,
          );
        }
        if (result.rollouts) out.write(`  rollouts: ${formatRollouts(result.rollouts)}\n`);
        out.write(`  metrics: ${result.metricsPath}\n  plot:    ${result.plotPath}\n`);
        out.write(`  tensorboard --logdir ${result.runDir}/metrics/tensorboard\n`);
        if (result.status === 'interrupted') {
          const { resumeCommand } = await import('#shared/runtime/run-process');
          const command = resumeCommand({
            configPath: config,
            overrides,
            workdir: o.workdir,
            runId: result.runId,
            ...(o.maxSteps !== undefined ? { maxSteps: o.maxSteps } : {}),
            ...(o.learnerDevice ? { learnerDevice: o.learnerDevice } : {}),
          });
          out.write(`  resume with: ${command}\n`);
        }
        if (o.json) process.stdout.write(`${JSON.stringify(result)}\n`);
        process.exitCode = result.status === 'completed' ? 0 : result.status === 'interrupted' ? 130 : 1;
      },
    );
}
