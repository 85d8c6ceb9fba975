// `toolrl submit --env ENV --config run.yaml [--dataset data.parquet ...]`: uploads a run to a deployed
// environment (AWS, or LocalStack with AWS_ENDPOINT_URL); the dataset upload starts it. Prints the run id.
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson } from '../io.ts';

export function register(program: Command): void {
  program
    .command('submit')
    .description(
      'Upload a run (config, then datasets) to a deployed environment; the dataset upload starts it',
    )
    .requiredOption('--env <env>', 'environment name, as deployed with `npx cdk deploy --all -c env=ENV`')
    .requiredOption('--config <file>', 'run config (YAML)')
    .argument(
      '[overrides...]',
      'Hydra-style overrides: trainer.lr=1e-6 rollout.n=5 (verl paths too); +key=v adds, ~key removes',
    )
    .option(
      '--print-config',
      'print the effective config (overrides applied, defaults filled in) as YAML and exit',
    )
    .option(
      '--dataset <file>',
      "training dataset (.parquet, .jsonl or .json); repeatable; replaces the config's data.train",
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--run-id <id>', 'choose the run id (default: <name>-<time>-<4 hex>)')
    .option('--json', 'print {runId, bucket, uploaded} as JSON instead of text')
    .action(
      async (
        overrides: string[],
        o: {
          env: string;
          config: string;
          dataset?: string[];
          runId?: string;
          json?: boolean;
          printConfig?: boolean;
        },
      ) => {
        const { submitRun } = await import('#shared/operator/submit');
        const { assertEnvName } = await import('#shared/deployment/names');
        const { EnvironmentNotFoundError, awsSetupError } = await import('#shared/operator/environment');
        const { ConfigError } = await import('#shared/config/resolve');
        try {
          assertEnvName(o.env);
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        const { prepareInputs } = await import('#shared/pipeline/run-inputs');
        let prepared: ReturnType<typeof prepareInputs>;
        try {
          prepared = prepareInputs(o.config, { overrides, ...(o.dataset ? { datasets: o.dataset } : {}) });
        } catch (err) {
          if (err instanceof ConfigError) throw new UsageError(err.message);
          throw err;
        }
        if (!o.json) for (const n of prepared.notices) process.stderr.write(`note: ${n}\n`);
        if (o.printConfig) {
          const { stringify } = await import('yaml');
          process.stdout.write(stringify(prepared.config));
          return;
        }
        try {
          const r = await submitRun({
            env: o.env,
            configPath: o.config,
            overrides,
            ...(o.dataset ? { datasets: o.dataset } : {}),
            ...(o.runId ? { runId: o.runId } : {}),
            onUpload: o.json
              ? undefined
              : (key, bytes) => process.stderr.write(`uploaded ${key} (${bytes} bytes)\n`),
          });
          if (o.json) printJson({ runId: r.runId, bucket: r.bucket, uploaded: r.uploaded });
          else {
            process.stdout.write(`${r.runId}\n`);
            process.stderr.write(`watch it with: toolrl status ${r.runId} --env ${o.env} --watch\n`);
          }
        } catch (err) {
          if (err instanceof ConfigError || err instanceof EnvironmentNotFoundError)
            throw new UsageError(err.message);
          // No region or credentials is the user's setup, not a bug: say what to set, without the SDK's stack.
          const setup = awsSetupError(err);
          throw setup ? new UsageError(setup.message) : err;
        }
      },
    );
}
