// `toolrl train`: one whole run on this machine. Uploads the config and the files it names into the workdir's
// blob store the way `toolrl submit` uploads them to S3 (the dataset last: its notification starts the run),
// runs the pipeline and the learner until the run completes, fails, or is interrupted (Ctrl-C: everything
// stops cleanly and `--resume RUN_ID` continues from the queues' journals and the learner's checkpoint; after a
// kill too: the learner dies with this process, and a deterministic run replays the versions it had published
// since its last checkpoint, gpu-worker/toolrl_learner/train/versions.py). A run whose learner waits while nothing
// in the pipeline can bring it groups fails with the reason (stall-watch.ts).
import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '#shared/config/resolve';
import { readDataset } from '#shared/data/dataset';
import { readJson } from '#shared/pipeline/blob-json';
import { type EvalSummary, EvalSummarySchema } from '#shared/pipeline/eval';
import { inputBytes, prepareInputs } from '#shared/pipeline/run-inputs';
import { readRunStatus, transitionRun } from '#shared/pipeline/run-status';
import { FeederStateSchema } from '#shared/pipeline/stages/feeder';
import type { LoopStats } from '#shared/policy/decode-loop';
import { jsonLinesLog } from '#shared/ports/log';
import type { QueueSet } from '#shared/ports/queue-set';
import type { RunConfig } from '#shared/schemas/config/run';
import { type LearnerOutputLine, type LearnerState, LearnerStateSchema } from '#shared/schemas/learner-stdio';
import { newRunId, RunIdSchema } from '#shared/schemas/messages/run-event';
import type { RunStatus } from '#shared/schemas/run-status';
import { pause } from '#shared/tools/limits';
import { keys } from '#shared/topology';
import { EmbeddedPipeline, learnerPython } from './embedded.ts';
import type { InvocationResult } from './event-source-mapping.ts';
import { resumeCommand, writeResumeCommand } from './run-process.ts';
import { type Selection, selectPolicy } from './select.ts';
import { STALL_LIMIT_SEC, StallWatch } from './stall-watch.ts';

export interface TrainOptions {
  readonly configPath: string;
  /** Hydra-style `key=value` overrides of the config (see config/overrides.ts). */
  readonly overrides?: readonly string[];
  /** Blob store root; the run's files go under `<workdir>/runs/<runId>/`. */
  readonly workdir: string;
  /** The run's trainer.max_steps (`--max-steps`): the learner and the feeder read it from the run's config. */
  readonly maxSteps?: number;
  /** Continue this run (its queues and the learner's checkpoint) instead of starting a new one. */
  readonly resume?: string;
  readonly runId?: string;
  readonly ortThreads?: number;
  readonly python?: string;
  /** The learner's device: `cpu` runs `trainer.num_gpus` learner ranks on CPU (gloo) where there are no GPUs. */
  readonly learnerDevice?: 'cpu' | 'cuda';
  /** Ctrl-C: stop cleanly. */
  readonly signal?: AbortSignal;
  /** How long the learner may wait with nothing queued anywhere before the run fails as stalled (stall-watch.ts). */
  readonly stallLimitSec?: number;
  readonly onEvent?: (e: TrainEvent) => void;
  /** Called with the pipeline before it starts (bench/embedded instruments its queues, store and policies). */
  readonly onPipeline?: (pipeline: EmbeddedPipeline) => void;
}

export type TrainEvent =
  | { kind: 'started'; runId: string; runDir: string; resumed: boolean; config: RunConfig; queues: QueueSet }
  | { kind: 'running'; run: RunStatus }
  | { kind: 'learner'; line: LearnerOutputLine }
  | { kind: 'invoke'; result: InvocationResult }
  | { kind: 'eval'; summary: EvalSummary }
  | { kind: 'selecting'; data: string; versions: number }
  | { kind: 'select'; version: number; summary: EvalSummary };

export interface TrainResult {
  readonly runId: string;
  readonly runDir: string;
  readonly status: RunStatus['status'] | 'interrupted';
  readonly reason: string | null;
  readonly learner: LearnerState | undefined;
  /** Validation summaries by policy version, in version order. */
  readonly evals: EvalSummary[];
  readonly metricsPath: string;
  readonly plotPath: string;
  readonly seconds: number;
  /** Where the rollout engine's time went in this process (prefill, decode passes, sampling); absent when it decoded nothing. */
  readonly rollouts?: LoopStats;
  /** The final policy chosen on `data.dev` (select.ts), when the config names one and the run completed. */
  readonly selection?: Selection;
}

export async function train(opts: TrainOptions): Promise<TrainResult> {
  const started = Date.now();
  const configDir = dirname(resolve(opts.configPath));
  const inputs = prepareInputs(opts.configPath, {
    overrides: opts.overrides ?? [],
    ...(opts.maxSteps !== undefined ? { maxSteps: opts.maxSteps } : {}),
  });
  const { config, configText } = inputs;

  // The dev split is read only once the run has completed: a file that cannot be read fails now, not then.
  const devPath = config.data.dev !== undefined ? resolve(configDir, config.data.dev) : undefined;
  if (devPath !== undefined) {
    const rows = await readDataset(devPath).catch((err: unknown) => {
      throw new ConfigError(`data.dev: cannot read ${devPath}: ${(err as Error).message}`);
    });
    if (rows.length === 0) throw new ConfigError(`data.dev: ${devPath} has no rows`);
  }

  const workdir = resolve(opts.workdir);
  const runId = opts.resume ?? opts.runId ?? newRunId(config.name);
  const idCheck = RunIdSchema.safeParse(runId);
  if (!idCheck.success) throw new ConfigError(`run id ${runId}: ${idCheck.error.issues[0]?.message}`);
  const runDir = join(workdir, keys.runPrefix(runId));
  // A run killed before its run.json was written (while its inputs were uploaded) resumes by uploading them again.
  const hasRunJson = existsSync(join(workdir, keys.runJson(runId)));
  if (opts.resume && !hasRunJson && !existsSync(join(workdir, keys.config(runId))))
    throw new ConfigError(
      `there is no run ${runId} to resume in ${workdir} (no ${join(workdir, keys.runJson(runId))})`,
    );
  if (!opts.resume && existsSync(runDir))
    throw new ConfigError(`${runDir} already exists; use --resume ${runId}`);
  await mkdir(runDir, { recursive: true });

  const logFile = createWriteStream(join(runDir, 'pipeline.log'), { flags: 'a' });
  const log = jsonLinesLog((l) => logFile.write(l), { runId });
  const emit = opts.onEvent ?? (() => {});
  let stall: StallWatch | undefined;
  const pipeline = new EmbeddedPipeline({
    root: workdir,
    runId,
    sourceDir: configDir,
    log,
    ...(opts.ortThreads !== undefined ? { ortThreads: opts.ortThreads } : {}),
    ...(opts.python ? { python: opts.python } : {}),
    ...(opts.learnerDevice ? { learnerDevice: opts.learnerDevice } : {}),
    onLearnerLine: (line) => {
      stall?.onLearnerLine(line);
      emit({ kind: 'learner', line });
    },
    onInvoke: (result) => emit({ kind: 'invoke', result }),
  });
  stall = new StallWatch(pipeline.queues.queues, {
    limitSec: opts.stallLimitSec ?? STALL_LIMIT_SEC,
    linesWritten: () => pipeline.learner?.linesWritten ?? 0,
  });
  writeResumeCommand(
    runDir,
    resumeCommand({
      configPath: resolve(opts.configPath),
      overrides: opts.overrides ?? [],
      workdir,
      runId,
      ...(opts.maxSteps !== undefined ? { maxSteps: opts.maxSteps } : {}),
      ...(opts.learnerDevice ? { learnerDevice: opts.learnerDevice } : {}),
    }),
  );
  opts.onPipeline?.(pipeline);
  const seenEvals = new Set<number>();
  const unwatch = pipeline.blobs.onPut((key) => {
    if (!key.startsWith(keys.evalSummaries(runId))) return;
    void readJson(pipeline.blobs, key, EvalSummarySchema).then((s) => {
      if (s && !seenEvals.has(s.value.policyVersion)) {
        seenEvals.add(s.value.policyVersion);
        emit({ kind: 'eval', summary: s.value });
      }
    });
  });

  let interrupted = false;
  let rollouts: LoopStats | undefined;
  try {
    pipeline.start();
    emit({ kind: 'started', runId, runDir, resumed: Boolean(opts.resume), config, queues: pipeline.queues });
    if (opts.resume && hasRunJson) {
      const run = await readRunStatus(pipeline.blobs, runId);
      if (run && (run.status === 'starting' || run.status === 'running'))
        pipeline.startLearner(runId, run.config?.trainer);
    } else {
      await pipeline.blobs.put(keys.config(runId), configText);
      // Other inputs, then validation, then training datasets: the last upload starts the run.
      for (const f of inputs.files)
        await pipeline.blobs.put(`${keys.inputPrefix(runId)}${f.name}`, inputBytes(f));
    }
    interrupted = await waitForEnd(pipeline, runId, opts.signal, stall, (run) =>
      emit({ kind: 'running', run }),
    );
  } finally {
    unwatch();
    await pipeline.stop();
    const stats = pipeline.policies.engineStats?.();
    if (stats && stats.prefillTokens + stats.decodeTokens > 0) rollouts = stats;
    await new Promise<void>((r) => logFile.end(r));
  }

  const run = await readRunStatus(pipeline.blobs, runId);
  const learner = (await readJson(pipeline.blobs, keys.learnerState(runId), LearnerStateSchema))?.value;
  const evals: EvalSummary[] = [];
  for (const info of await pipeline.blobs.list(keys.evalSummaries(runId))) {
    const s = await readJson(pipeline.blobs, info.key, EvalSummarySchema);
    if (s) evals.push(s.value);
  }
  evals.sort((a, b) => a.policyVersion - b.policyVersion);
  if (run?.status === 'completed' && evals.length > 0)
    redrawPlot(opts.python ?? learnerPython(), workdir, run);
  const trained = evals.filter((e) => e.policyVersion > 0).length;
  const choose = run?.status === 'completed' && !interrupted && trained > 0 ? devPath : undefined;
  if (choose !== undefined) emit({ kind: 'selecting', data: choose, versions: trained });
  const selection =
    choose !== undefined
      ? await selectPolicy({
          runDir,
          dataPath: choose,
          ...(opts.ortThreads !== undefined ? { ortThreads: opts.ortThreads } : {}),
          ...(opts.python ? { python: opts.python } : {}),
          onCandidate: (version, summary) => emit({ kind: 'select', version, summary }),
        })
      : undefined;
  return {
    runId,
    runDir,
    status: interrupted ? 'interrupted' : (run?.status ?? 'failed'),
    reason: run?.reason ?? null,
    learner,
    evals,
    metricsPath: join(runDir, 'metrics', 'metrics.jsonl'),
    plotPath: join(runDir, 'metrics', 'reward_curve.png'),
    seconds: (Date.now() - started) / 1000,
    ...(rollouts ? { rollouts } : {}),
    ...(selection ? { selection } : {}),
  };
}

/**
 * The learner draws reward_curve.png as it trains, but the final validation is written after it has finished:
 * redraw the plot once the run has completed so it ends with that point. Best effort: a plot is not worth failing
 * a completed run for.
 */
function redrawPlot(python: string, workdir: string, run: RunStatus): void {
  const publishEvery = run.config?.trainer?.publish_every ?? 1;
  spawnSync(
    python,
    [
      '-m',
      'toolrl_learner',
      'plot',
      '--root',
      workdir,
      '--run-id',
      run.runId,
      '--publish-every',
      String(publishEvery),
    ],
    { stdio: 'ignore', timeout: 120_000 },
  );
}

/** Waits for the run to complete or fail; returns true when interrupted by the signal instead. */
async function waitForEnd(
  pipeline: EmbeddedPipeline,
  runId: string,
  signal: AbortSignal | undefined,
  stall: StallWatch,
  onRunning: (run: RunStatus) => void,
): Promise<boolean> {
  let learnerEnd: Promise<void> | undefined;
  let announced = false;
  let stallCheckedAt = 0;
  for (;;) {
    if (signal?.aborted) return true;
    const run = await readRunStatus(pipeline.blobs, runId);
    if (run?.status === 'completed' || run?.status === 'failed') return false;
    if (run?.status === 'running' && !announced) {
      announced = true;
      onRunning(run);
    }
    const bridge = pipeline.learner;
    if (bridge && !learnerEnd) {
      learnerEnd = bridge.exit().then(async (exit) => {
        if (exit.done && exit.code === 0) return;
        if (signal?.aborted) return;
        const why = exit.error ?? `exit code ${exit.code}${exit.signal ? ` (${exit.signal})` : ''}`;
        await transitionRun(pipeline.blobs, runId, 'failed', new Date(), () => ({
          reason: `the learner stopped: ${why}; see ${join('runs', runId, 'learner.log')}`,
        }));
      });
    }
    if (Date.now() - stallCheckedAt >= 1000) {
      stallCheckedAt = Date.now();
      const stalled = await stall.check();
      if (stalled) {
        const fed = await readJson(pipeline.blobs, keys.feederState(runId), FeederStateSchema);
        const issued = fed
          ? `; the feeder has issued ${fed.value.issued} of ${run?.totals.groupsPlanned ?? '?'} train groups`
          : '';
        await transitionRun(pipeline.blobs, runId, 'failed', new Date(), () => ({
          reason: `${stalled}${issued}; see ${join('runs', runId, 'pipeline.log')} and learner.log`,
        }));
      }
    }
    await pause(250, signal);
  }
}
