// The run-starter stage: on a dataset upload under `runs/<runId>/input/`, validate the config and the
// datasets, then either fail the run with a readable reason in run.json (no retries, no rollouts) or start
// it: resolved config and plan in run.json (created once: a second event for the same upload starts
// nothing) and the learner job submitted.
// The upload contract (what `toolrl submit` and `toolrl train` do, and README "Start a run with any S3 client"):
// config.yaml first, then the other files it names, the validation datasets, and the training datasets last; the run
// starts when the last dataset the config names has arrived. The config's own upload is checked at once and starts
// the watch over the datasets (input-check.ts): a `.json` dataset, which notifies nothing, starts the run at the next
// look. An upload that cannot start a run ends it with the reason in run.json: an invalid config, a dataset before
// (or without) its config, a dataset (or a `.csv`) the config does not name, a dataset outside input/, datasets
// still missing INPUT_WAIT_SEC after the config.

import { ConfigError, parseRunConfig, resolveRun, toolsFilesOf } from '#shared/config/resolve';
import { DatasetError, type DatasetProblem, formatProblem } from '#shared/data/dataset';
import { datasetFormat, readDatasetObject } from '#shared/data/dataset-file';
import { putJsonIfAbsent } from '#shared/pipeline/blob-json';
import { recordLearnerJob, takeLearnerLease } from '#shared/pipeline/learner-lease';
import { groupsPlanned, planStages, resolveSaveEvery } from '#shared/pipeline/plan';
import { datasetPaths, inputName, referencedFiles, resolveRunConfig } from '#shared/pipeline/run-config';
import { readRunStatus, transitionRun } from '#shared/pipeline/run-status';
import type { BlobStore } from '#shared/ports/blob-store';
import { PermanentError } from '#shared/ports/errors';
import type { LearnerJobs } from '#shared/ports/learner-jobs';
import type { StageContext } from '#shared/ports/stage-context';
import type { RunConfig } from '#shared/schemas/config/run';
import { parseInputKey, type RunEvent, RunIdSchema } from '#shared/schemas/messages/run-event';
import { notifiedKeys } from '#shared/schemas/messages/s3-event';
import type { RunStatus } from '#shared/schemas/run-status';
import { templatePattern } from '#shared/templates';
import { KEY_TEMPLATES, keys } from '#shared/topology';
import { INPUT_WAIT_SEC, scheduleInputCheck, strayInputs } from './input-check.ts';

/** Counts prompt tokens when a tokenizer is at hand (a local model folder); undefined skips that check. */
export type PromptTokenCounter = (row: import('#shared/schemas/dataset-row').DatasetRow) => Promise<number>;

export interface RunStarterContext extends StageContext {
  readonly learnerJobs: LearnerJobs;
  readonly countPromptTokens?: (config: RunConfig) => Promise<PromptTokenCounter | undefined>;
  /** Recorded in run.json for embedded runs (see RunStatus.input.sourceDir). */
  readonly sourceDirOf?: (runId: string) => string | undefined;
}

export async function handleRunEvent(ctx: RunStarterContext, event: RunEvent): Promise<void> {
  if ('kind' in event) {
    await checkRunInputs(ctx, event.runId, event.check);
    return;
  }
  for (const { key } of notifiedKeys(event)) await startRunFromUpload(ctx, key);
}

/** Any key under a run: its id and the path below the run's folder. */
const RUN_KEY = templatePattern(`${KEY_TEMPLATES.runPrefix}{path}`, { path: '.+' });

/** The folders of the key layout under runs/<runId>/ but the input's: the pipeline writes them, users do not. */
const PIPELINE_FOLDERS = new Set(
  Object.values(KEY_TEMPLATES)
    .filter((t) => t.startsWith(KEY_TEMPLATES.runPrefix) && !t.startsWith(KEY_TEMPLATES.inputPrefix))
    .map((t) => t.slice(KEY_TEMPLATES.runPrefix.length).split('/'))
    .filter((segments) => segments.length > 1)
    .map((segments) => segments[0]!),
);

/** An upload in a folder the pipeline writes (metrics.jsonl is one of its own uploads, not a user's). */
function inPipelineFolder(key: string): boolean {
  const segments = RUN_KEY.exec(key)?.groups?.path?.split('/') ?? [];
  return segments.length > 1 && PIPELINE_FOLDERS.has(segments[0]!);
}

export async function startRunFromUpload(ctx: RunStarterContext, key: string): Promise<void> {
  const input = parseInputKey(key);
  const isConfig = input !== undefined && key === keys.config(input.runId);
  if (inPipelineFolder(key) || (datasetFormat(key) === null && !isConfig)) {
    ctx.log.debug('ignored: not an upload under runs/<runId>/', { key });
    return;
  }
  const runId = input?.runId ?? RUN_KEY.exec(key)?.groups?.runId;
  if (runId === undefined) {
    ctx.log.info('ignored: not under runs/<runId>/', { key });
    return;
  }
  const idCheck = RunIdSchema.safeParse(runId);
  if (!idCheck.success)
    throw new PermanentError(`${key}: invalid run id: ${idCheck.error.issues[0]?.message}`);
  if (!input) {
    // A dataset next to input/ rather than in it: the run would wait for it forever.
    if (!(await readRunStatus(ctx.blobs, runId)))
      await failRun(ctx, {
        ...baseStatus(ctx, runId),
        reason: `${key} is not under ${keys.inputPrefix(runId)}: a run's config and datasets go there (toolrl submit puts them there)`,
      });
    return;
  }

  if (isConfig) {
    await checkRunInputs(ctx, runId, 0);
    return;
  }

  const existing = await readRunStatus(ctx.blobs, runId);
  if (existing) {
    // A second event (duplicate delivery, or the upload of another input file) starts nothing; a run left
    // in `starting` by a crash before its learner was submitted is finished here.
    if (existing.status === 'starting') await submitLearner(ctx, existing);
    else ctx.log.info('run already exists; nothing to start', { runId, status: existing.status });
    return;
  }

  const loaded = await loadConfig(ctx, runId);
  if (!loaded) return;
  const { paths, withConfig } = loaded;

  // An upload the config does not name (a misspelt file, a wrong folder) would leave the run waiting forever.
  const named = namedInputs(loaded.config, runId);
  if (!named.has(key)) {
    await failRun(ctx, { ...withConfig, reason: notNamedReason([key], paths) });
    return;
  }

  // Start only once every dataset the config names is present; the last upload's event starts the run.
  for (const k of [...paths.train, ...paths.val]) {
    if (!(await ctx.blobs.head(k))) {
      ctx.log.info('waiting for the remaining inputs', { runId, missing: k });
      return;
    }
  }
  await startRun(ctx, withConfig, paths, loaded.toolsFiles);
}

/**
 * A look at the run's inputs (`check` 0: its config.yaml was just uploaded): the run starts when every dataset the
 * config names is there; it fails when the config is invalid, when input/ holds a dataset the config does not name,
 * or when a named dataset is still missing INPUT_WAIT_SEC after the config; otherwise the next look is scheduled.
 */
export async function checkRunInputs(ctx: RunStarterContext, runId: string, check: number): Promise<void> {
  const existing = await readRunStatus(ctx.blobs, runId);
  if (existing) {
    if (existing.status === 'starting') await submitLearner(ctx, existing);
    return;
  }
  const configInfo = await ctx.blobs.head(keys.config(runId));
  const loaded = await loadConfig(ctx, runId);
  if (!loaded || !configInfo) return;
  const { paths, withConfig } = loaded;
  const datasets = [...paths.train, ...paths.val];
  const present = new Set(await ctx.blobs.listKeys(keys.inputPrefix(runId)));
  const stray = strayInputs([...present], namedInputs(loaded.config, runId), keys.config(runId));
  if (stray.length > 0) {
    await failRun(ctx, { ...withConfig, reason: notNamedReason(stray, paths) });
    return;
  }
  const missing = datasets.filter((k) => !present.has(k));
  if (missing.length === 0) {
    await startRun(ctx, withConfig, paths, loaded.toolsFiles);
    return;
  }
  const waitedSec = (ctx.now().getTime() - configInfo.lastModified.getTime()) / 1000;
  if (waitedSec >= INPUT_WAIT_SEC) {
    await failRun(ctx, {
      ...withConfig,
      reason:
        `${missing.join(', ')} never arrived: config.yaml names ${missing.length === 1 ? 'it' : 'them'} and was ` +
        `uploaded ${Math.round(waitedSec / 60)} min ago (a run waits ${INPUT_WAIT_SEC / 60} min for its datasets); ` +
        'start again under a new run id with every dataset the config names',
    });
    return;
  }
  const own = ctx.queues['run-events'];
  if (!own)
    throw new Error('the run-starter has no run-events queue to schedule its next look at the inputs');
  ctx.log.info('waiting for the remaining inputs', { runId, missing, check: check + 1 });
  await scheduleInputCheck(own, runId, check + 1);
}

/** The run's config, resolved; undefined (and the run failed with the reason) when it is missing or invalid. */
async function loadConfig(
  ctx: RunStarterContext,
  runId: string,
): Promise<
  | {
      config: RunConfig;
      paths: { train: string[]; val: string[] };
      withConfig: RunStatus;
      toolsFiles: Map<string, string>;
    }
  | undefined
> {
  const base = baseStatus(ctx, runId);
  const configBytes = await ctx.blobs.get(keys.config(runId));
  if (!configBytes) {
    await failRun(ctx, {
      ...base,
      reason: `${keys.config(runId)} is missing: upload the run config before the dataset (toolrl submit uploads config.yaml first, the datasets last; start again under a new run id)`,
    });
    return undefined;
  }
  let config: RunConfig;
  const toolsFiles = new Map<string, string>();
  try {
    config = resolveRunConfig(
      parseRunConfig(Buffer.from(configBytes).toString('utf8'), 'config.yaml'),
      runId,
    );
    // The tools files are uploaded with the config, under their file names: read now, inlined into `resolved`.
    for (const file of toolsFilesOf(config)) {
      const bytes = await ctx.blobs.get(`${keys.inputPrefix(runId)}${inputName(file)}`);
      if (bytes) toolsFiles.set(file, Buffer.from(bytes).toString('utf8'));
    }
    resolveRun(config, (f) => toolsFiles.get(f)); // every stage and tools file checked before the datasets are read
  } catch (err) {
    if (err instanceof ConfigError || err instanceof PermanentError) {
      await failRun(ctx, { ...base, reason: err.message });
      return undefined;
    }
    throw err;
  }
  const paths = datasetPaths(config);
  return {
    config,
    paths,
    withConfig: { ...base, config, input: { ...base.input, train: paths.train, val: paths.val } },
    toolsFiles,
  };
}

/**
 * Why uploads the config does not name fail the run (the same words whether a dataset's own event or a look at the
 * inputs finds them first).
 */
function notNamedReason(uploaded: readonly string[], paths: { train: string[]; val: string[] }): string {
  return (
    `${uploaded.join(', ')} ${uploaded.length === 1 ? 'was' : 'were'} uploaded, but config.yaml names the datasets ` +
    `${[...paths.train, ...paths.val].join(', ')}: a dataset is .parquet, .jsonl or .json, uploaded under the bare ` +
    'file name data.train / data.val give it (data/train.parquet is input/train.parquet); upload those (or fix the config)'
  );
}

/** Keys of every file the config names under the run's input/: datasets and other inputs. */
function namedInputs(config: RunConfig, runId: string): Set<string> {
  const paths = datasetPaths(config);
  return new Set([...paths.train, ...paths.val, ...otherInputKeys(config, runId)]);
}

/** Validates the datasets, plans the run, creates run.json (once) and submits the learner. */
async function startRun(
  ctx: RunStarterContext,
  withConfig: RunStatus,
  paths: { train: string[]; val: string[] },
  toolsFiles: Map<string, string>,
): Promise<void> {
  const runId = withConfig.runId;
  const config = withConfig.config as RunConfig;
  const counts = new Map<string, number>();
  const problems: string[] = [];
  const countTokens = await ctx.countPromptTokens?.(config);
  for (const k of [...paths.train, ...paths.val]) {
    const found = await validateDataset(ctx.blobs, k, config.data.max_prompt_length, countTokens);
    if (typeof found === 'number') counts.set(k, found);
    else problems.push(...found.map((p) => `${k}: ${formatProblem(p)}`));
  }
  if (problems.length > 0) {
    const shown = problems.slice(0, 10).join('\n');
    const more = problems.length > 10 ? `\n… and ${problems.length - 10} more` : '';
    await failRun(ctx, { ...withConfig, reason: `invalid dataset:\n${shown}${more}` });
    return;
  }

  const stages = planStages(config, (k) => counts.get(k) ?? 0);
  // The learner counts checkpoints in steps: save_every_epochs becomes steps of each stage here.
  const final = resolveSaveEvery(config, stages);
  const status: RunStatus = {
    ...withConfig,
    config: final,
    resolved: resolveRun(final, (f) => toolsFiles.get(f)),
    totals: {
      groupsPlanned: groupsPlanned(stages),
      trainPrompts: stages.reduce((n, s) => n + s.rows, 0),
      valPrompts: paths.val.reduce((n, k) => n + (counts.get(k) ?? 0), 0),
      epochs: stages.reduce((n, s) => n + s.epochs, 0),
    },
  };
  const created = await putJsonIfAbsent(ctx.blobs, keys.runJson(runId), status);
  if (!created.written) {
    ctx.log.info('another run-starter created the run first', { runId });
    return;
  }
  ctx.log.info('run created', { runId, groupsPlanned: status.totals.groupsPlanned });
  await submitLearner(ctx, status);
}

/**
 * Submits the run's learner under its lease (learner-lease.ts): of starters racing on one run (a duplicate event,
 * a redelivery while run.json still says `starting`) exactly one submits; the others take its job id.
 */
async function submitLearner(ctx: RunStarterContext, run: RunStatus): Promise<void> {
  const lease = await takeLearnerLease(ctx, run.runId);
  let jobId: string;
  if (lease.kind === 'submitted') {
    jobId = lease.jobId;
    ctx.log.info('learner already submitted under the run lease', { runId: run.runId, jobId });
  } else {
    jobId = (await ctx.learnerJobs.submit(run)).jobId;
    await recordLearnerJob(ctx, lease, jobId);
    ctx.log.info('learner submitted', { runId: run.runId, jobId });
  }
  await transitionRun(ctx.blobs, run.runId, 'running', ctx.now(), (cur) => ({
    learner: { submittedAt: cur.learner.submittedAt ?? ctx.now().toISOString(), jobId },
  }));
}

/** Rows (a count) or every problem found; unreadable files and bad rows are problems, not exceptions. */
async function validateDataset(
  blobs: BlobStore,
  key: string,
  maxPromptLength: number,
  countTokens: PromptTokenCounter | undefined,
): Promise<number | DatasetProblem[]> {
  const data = await blobs.get(key);
  if (!data) return [{ row: null, message: 'not found' }];
  let rows: Awaited<ReturnType<typeof readDatasetObject>>;
  try {
    rows = await readDatasetObject(key, data);
  } catch (err) {
    if (err instanceof DatasetError) return err.problems;
    throw err;
  }
  if (rows.length === 0) return [{ row: null, message: 'the dataset has no rows' }];
  const problems: DatasetProblem[] = [];
  if (countTokens) {
    for (let i = 0; i < rows.length; i++) {
      const n = await countTokens(rows[i]!);
      if (n > maxPromptLength)
        problems.push({
          row: i,
          message: `prompt is ${n} tokens, over data.max_prompt_length=${maxPromptLength}`,
        });
    }
  }
  return problems.length > 0 ? problems : rows.length;
}

function baseStatus(ctx: RunStarterContext, runId: string): RunStatus {
  const now = ctx.now().toISOString();
  const sourceDir = ctx.sourceDirOf?.(runId);
  return {
    schemaVersion: 1,
    runId,
    status: 'starting',
    reason: null,
    createdAt: now,
    updatedAt: now,
    config: null,
    input: { config: keys.config(runId), train: [], val: [], ...(sourceDir ? { sourceDir } : {}) },
    totals: { groupsPlanned: null, trainPrompts: 0, valPrompts: 0, epochs: 0 },
    learner: { submittedAt: null, jobId: null },
    completedAt: null,
  };
}

/** Records a permanent failure; the event is then handled (not retried), and nothing else happens. */
async function failRun(ctx: RunStarterContext, status: RunStatus): Promise<void> {
  const at = ctx.now().toISOString();
  const failed: RunStatus = { ...status, status: 'failed', updatedAt: at, completedAt: at };
  const put = await putJsonIfAbsent(ctx.blobs, keys.runJson(status.runId), failed);
  ctx.log.warn('run failed at start', { runId: status.runId, reason: status.reason, recorded: put.written });
}

/** Keys of the run's other inputs (tool configs, reward modules, SFT data): uploads that start nothing. */
function otherInputKeys(config: RunConfig, runId: string): string[] {
  return referencedFiles(config).other.map((p) => `${keys.inputPrefix(runId)}${inputName(p)}`);
}
