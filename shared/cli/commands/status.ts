// `toolrl status RUN_ID (--env ENV | --workdir DIR) [--json] [--watch [SECONDS]] [--start-timeout SECONDS]`: a
// run's state, warm start, step, policy version and reward, its dead-lettered messages by stage with their reasons,
// and its messages in each queue (AWS, or LocalStack with AWS_ENDPOINT_URL; `--workdir`: an embedded `toolrl train`
// run, read from its folder, `interrupted` with the command that resumes it when its process is gone). `--watch` on
// a run uploaded but not started yet waits for it to start.
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson } from '../io.ts';

// Nothing changes until someone acts: an interrupted embedded run waits for `toolrl train --resume`.
const TERMINAL = new Set(['completed', 'failed', 'interrupted']);

/** How long `--watch` waits for an uploaded run to start, by default. */
const DEFAULT_START_TIMEOUT_S = 600;

type Report = import('#shared/operator/run-report').RunReport;

/**
 * `next`, but while the run's files are uploaded and its run.json is not there yet, a line saying so (on stderr) every
 * `period` seconds instead of an error, until `timeoutS` has passed since the watch began; then the error, saying
 * how long it waited and what to look at.
 */
function waitingForStart(
  next: () => Promise<Report>,
  runId: string,
  period: number,
  timeoutS: number,
  json: boolean,
): () => Promise<Report> {
  const began = Date.now();
  return async () => {
    const { RunNotStartedError } = await import('#shared/operator/run-report');
    const { INPUT_WAIT_SEC } = await import('#shared/pipeline/stages/input-check');
    for (;;) {
      try {
        return await next();
      } catch (err) {
        if (!(err instanceof RunNotStartedError)) throw err;
        const waited = (Date.now() - began) / 1000;
        const failsAt = new Date(err.configAt.getTime() + INPUT_WAIT_SEC * 1000).toISOString();
        if (waited >= timeoutS)
          throw new UsageError(
            `run ${runId} has not started after ${Math.round(waited)} s of watching: ${err.message}. A running ` +
              `pipeline starts it when the last dataset its config names arrives, and fails it at ${failsAt} if ` +
              'they have not all arrived; look at the worker (or the run-starter function) logs. --start-timeout ' +
              'SECONDS waits longer',
          );
        if (!json)
          process.stderr.write(
            `${new Date().toISOString()} run ${runId} is uploaded (input/: ${err.inputs.join(', ')}) and not ` +
              `started yet; waiting (up to ${timeoutS} s; the pipeline fails it at ${failsAt} if a dataset is missing)\n`,
          );
        await new Promise((r) => setTimeout(r, period * 1000));
      }
    }
  };
}

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
    .option(
      '--start-timeout <seconds>',
      'with --watch: how long to wait for a run whose files are uploaded but which has not started',
      String(DEFAULT_START_TIMEOUT_S),
    )
    .action(
      async (
        runId: string,
        o: {
          env: string;
          workdir?: string;
          json?: boolean;
          watch?: string | boolean;
          startTimeout: string;
        },
      ) => {
        const { assertEnvName } = await import('#shared/deployment/names');
        const { clientOptions, resolveEnvironment, EnvironmentNotFoundError, awsSetupError } = await import(
          '#shared/operator/environment'
        );
        const { runReport, formatRunReport, RunNotFoundError } = await import('#shared/operator/run-report');
        const period = o.watch === undefined ? 0 : o.watch === true ? 10 : Number(o.watch);
        if (!Number.isFinite(period) || period < 0)
          throw new UsageError(`--watch must be a number of seconds, got ${o.watch}`);
        const startTimeout = Number(o.startTimeout);
        if (!Number.isFinite(startTimeout) || startTimeout < 0)
          throw new UsageError(`--start-timeout must be a number of seconds, got ${o.startTimeout}`);
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
            // Uploaded but not started yet: wait for the run-starter, within the bound.
            if (period) next = waitingForStart(next, runId, period, startTimeout, !!o.json);
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
