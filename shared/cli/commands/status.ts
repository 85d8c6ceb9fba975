// `toolrl status RUN_ID (--env ENV | --workdir DIR) [--json] [--watch [SECONDS]]`: a run's state, step, policy
// version and reward, its dead-lettered messages by stage with their reasons, and the queue depths (AWS, or
// LocalStack with AWS_ENDPOINT_URL; `--workdir`: an embedded `toolrl train` run, read from its folder, `interrupted`
// with the command that resumes it when its process is gone).
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson } from '../io.ts';

// Nothing changes until someone acts: an interrupted embedded run waits for `toolrl train --resume`.
const TERMINAL = new Set(['completed', 'failed', 'interrupted']);

export function register(program: Command): void {
  program
    .command('status')
    .description(
      "Show a run's state, step, policy version, reward, dead-lettered messages by stage and reason, and queue depths",
    )
    .argument('<runId>', 'the id `toolrl submit` (or `toolrl train`) printed')
    .option('--env <env>', 'environment name', 'dev')
    .option('--workdir <dir>', 'an embedded run: the --workdir of its `toolrl train`')
    .option('--json', 'print the report as JSON')
    .option('--watch [seconds]', 'refresh every SECONDS (default 10) until the run completes or fails')
    .action(
      async (
        runId: string,
        o: { env: string; workdir?: string; json?: boolean; watch?: string | boolean },
      ) => {
        const { assertEnvName } = await import('#shared/deployment/names');
        const { clientOptions, resolveEnvironment, EnvironmentNotFoundError, awsSetupError } = await import(
          '#shared/operator/environment'
        );
        const { runReport, formatRunReport, RunNotFoundError } = await import('#shared/operator/run-report');
        const period = o.watch === undefined ? 0 : o.watch === true ? 10 : Number(o.watch);
        if (!Number.isFinite(period) || period < 0)
          throw new UsageError(`--watch must be a number of seconds, got ${o.watch}`);
        try {
          let next: () => Promise<import('#shared/operator/run-report').RunReport>;
          if (o.workdir !== undefined) {
            const { embeddedRunReport } = await import('#shared/operator/embedded-report');
            const workdir = o.workdir;
            next = () => embeddedRunReport(workdir, runId);
          } else {
            assertEnvName(o.env);
            const client = clientOptions();
            const resources = await resolveEnvironment(o.env, client);
            next = () => runReport(resources, runId, client);
          }
          for (;;) {
            const report = await next();
            if (o.json) printJson(report);
            else
              process.stdout.write(
                `${period ? `\n${new Date().toISOString()}\n` : ''}${formatRunReport(report)}`,
              );
            if (!period || TERMINAL.has(report.status)) {
              // A failed run is an error for scripts that wait on it; so is an interrupted one (it will not finish
              // unless resumed).
              if (report.status === 'failed' || report.status === 'interrupted') process.exitCode = 1;
              return;
            }
            await new Promise((r) => setTimeout(r, period * 1000));
          }
        } catch (err) {
          if (err instanceof RunNotFoundError || err instanceof EnvironmentNotFoundError)
            throw new UsageError(err.message);
          if (err instanceof Error && /environment name/.test(err.message)) throw new UsageError(err.message);
          // No region or credentials is the user's setup, not a bug: say what to set, without the SDK's stack.
          const setup = awsSetupError(err);
          throw setup ? new UsageError(setup.message) : err;
        }
      },
    );
}
