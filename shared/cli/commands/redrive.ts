// `toolrl redrive RUN_ID (--env ENV | --workdir DIR) [--stage S ...] [--json]`: after fixing what made a run's
// messages fail, sends them back from the dead-letter queues to the stages that failed them (`toolrl status` lists
// them). AWS, or LocalStack with AWS_ENDPOINT_URL; `--workdir`: an embedded run (asked of its running `toolrl
// train`, or done on its queue journals when none runs).
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { printJson } from '../io.ts';

const STAGES = ['rollout', 'tool-call', 'reward', 'learner'] as const;
type Stage = (typeof STAGES)[number];

export function register(program: Command): void {
  program
    .command('redrive')
    .description("Send a run's dead-lettered messages back to their stages' queues, after a fix")
    .argument('<runId>', 'the id `toolrl submit` (or `toolrl train`) printed')
    .option('--env <env>', 'environment name', 'dev')
    .option('--workdir <dir>', 'an embedded run: the --workdir of its `toolrl train`')
    .option('--stage <stage...>', `only these stages' dead letters (${STAGES.join(', ')})`)
    .option('--json', 'print the result as JSON')
    .action(async (runId: string, o: { env: string; workdir?: string; stage?: string[]; json?: boolean }) => {
      const bad = (o.stage ?? []).filter((s) => !(STAGES as readonly string[]).includes(s));
      if (bad.length > 0) throw new UsageError(`unknown --stage ${bad.join(', ')}: use ${STAGES.join(', ')}`);
      const stages = o.stage as Stage[] | undefined;
      const { RedriveError, describeRedrive } = await import('#shared/pipeline/redrive');
      const { RedriveRequestError } = await import('#shared/runtime/redrive-requests');
      const { JournalsInUseError } = await import('#shared/adapters/embedded/journal-owner');
      const { EnvironmentNotFoundError, awsSetupError } = await import('#shared/operator/environment');
      try {
        const r =
          o.workdir !== undefined
            ? await redriveEmbedded(o.workdir, runId, stages)
            : await redriveAws(o.env, runId, stages);
        if (o.json) printJson(r);
        else process.stdout.write(`${describeRedrive(r)}\n`);
      } catch (err) {
        if (
          err instanceof RedriveError ||
          err instanceof RedriveRequestError ||
          err instanceof JournalsInUseError ||
          err instanceof EnvironmentNotFoundError
        )
          throw new UsageError(err.message);
        if (err instanceof Error && /environment name/.test(err.message)) throw new UsageError(err.message);
        const setup = o.workdir === undefined ? awsSetupError(err) : undefined;
        throw setup ? new UsageError(setup.message) : err;
      }
    });
}

async function redriveAws(env: string, runId: string, stages: Stage[] | undefined) {
  const { assertEnvName } = await import('#shared/deployment/names');
  const { clientOptions, resolveEnvironment } = await import('#shared/operator/environment');
  const { redriveEnvironmentRun } = await import('#shared/operator/redrive');
  assertEnvName(env);
  const client = clientOptions();
  return redriveEnvironmentRun(
    await resolveEnvironment(env, client),
    runId,
    client,
    stages ? { stages } : {},
  );
}

/** The `toolrl train` holding the run's queues does it (they live in its memory); else its journals are opened. */
async function redriveEmbedded(workdir: string, runId: string, stages: Stage[] | undefined) {
  const { resolve } = await import('node:path');
  const { FolderBlobStore } = await import('#shared/adapters/embedded/folder-blob-store');
  const { journalOwner } = await import('#shared/adapters/embedded/journal-owner');
  const { createEmbeddedQueues } = await import('#shared/adapters/embedded/queues');
  const { embeddedJournalDir } = await import('#shared/operator/embedded-report');
  const { requestRedrive } = await import('#shared/runtime/redrive-requests');
  const { redriveRun } = await import('#shared/pipeline/redrive');
  const { existsSync } = await import('node:fs');
  const { RedriveError } = await import('#shared/pipeline/redrive');
  const blobs = new FolderBlobStore(resolve(workdir));
  const dir = embeddedJournalDir(workdir, runId);
  if (!existsSync(dir))
    throw new RedriveError(`there is no run ${runId} with queues in ${resolve(workdir)} (no ${dir})`);
  const owner = journalOwner(dir);
  if (owner) return requestRedrive(blobs, runId, stages, { holder: `toolrl train (process ${owner.pid})` });
  const queues = createEmbeddedQueues({ journalDir: dir });
  try {
    return await redriveRun(blobs, queues, runId, { ...(stages ? { stages } : {}), waitTimeSec: 0 });
  } finally {
    await queues.close();
  }
}
