// `toolrl view RUN_ID [--workdir DIR | --env ENV] [--port N] [--open]`: a local web page for one run, its curves
// and every trajectory, read from its folder or its environment's bucket (the same key layout), refreshing while
// the run goes on. Bound to 127.0.0.1; it only reads the run.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';

/** Opens `url` in the desktop's browser; false when there is no opener to run. */
function openBrowser(url: string): Promise<boolean> {
  const [cmd, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', url]]
        : ['xdg-open', [url]];
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}

export function register(program: Command): void {
  program
    .command('view')
    .description("Serve a web page of a run's curves and trajectories on 127.0.0.1 (prints the URL)")
    .argument('<runId>', 'the id `toolrl train` (or `toolrl submit`) printed')
    .option('--env <env>', 'environment name (the run is in its bucket; default dev)')
    .option(
      '--workdir <dir>',
      'an embedded run: the --workdir of its `toolrl train` (default: . when ./runs/RUN_ID/ exists and no --env)',
    )
    .option('--port <n>', 'port on 127.0.0.1 (0 picks a free one)', '0')
    .option('--open', 'open the page in the default browser')
    .action(async (runId: string, o: { env?: string; workdir?: string; port: string; open?: boolean }) => {
      const port = Number(o.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new UsageError(`--port must be 0..65535, not ${o.port}`);
      const { assertEnvName } = await import('#shared/deployment/names');
      const { ensurePage } = await import('#shared/viewer/page-build');
      const { serveRun } = await import('#shared/viewer/server');
      const { serveUntilSignal } = await import('#shared/tools/serve');
      let source: import('#shared/viewer/source').RunSource;
      // `toolrl train`'s default workdir is `.`: a run trained here is viewed without flags.
      const workdir =
        o.workdir ?? (o.env === undefined && existsSync(join('runs', runId, 'run.json')) ? '.' : undefined);
      const env = o.env ?? 'dev';
      if (workdir !== undefined) {
        const { folderSource } = await import('#shared/viewer/source');
        source = folderSource(workdir, runId);
      } else {
        try {
          assertEnvName(env);
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
        const { bucketSource } = await import('#shared/viewer/source');
        const { EnvironmentNotFoundError, awsSetupError } = await import('#shared/operator/environment');
        try {
          source = await bucketSource(env, runId);
        } catch (err) {
          if (err instanceof EnvironmentNotFoundError) throw new UsageError(err.message);
          const setup = awsSetupError(err);
          throw setup ? new UsageError(setup.message) : err;
        }
      }
      let assetsDir: string;
      try {
        assetsDir = await ensurePage(undefined, (l) => process.stderr.write(`toolrl view: ${l}\n`));
      } catch (err) {
        throw new UsageError(
          `the viewer page is not built and cannot be built here (${(err as Error).message}): run npm ci && npm run setup`,
        );
      }
      let server: Awaited<ReturnType<typeof serveRun>>;
      try {
        server = await serveRun(source, { port, assetsDir });
      } catch (err) {
        if ((err as { code?: string }).code === 'EADDRINUSE')
          throw new UsageError(
            `port ${port} is in use on 127.0.0.1: pass another --port (or 0 for a free one)`,
          );
        throw err;
      }
      const info = server.view.info();
      if (!info.found)
        process.stderr.write(
          `toolrl view: no run ${runId} at ${info.where} yet; the page shows it once its files appear` +
            (info.otherRuns.length ? ` (runs there: ${info.otherRuns.join(', ')})` : '') +
            '\n',
        );
      for (const p of info.problems)
        process.stderr.write(`toolrl view: could not read ${p.key}: ${p.message}\n`);
      if (o.open && !(await openBrowser(server.url)))
        process.stderr.write('toolrl view: no browser opener found (xdg-open); open the URL yourself\n');
      await serveUntilSignal(
        server,
        `toolrl view: ${server.url}/  (run ${runId}, ${source.where}; Ctrl-C stops)`,
      );
    });
}
