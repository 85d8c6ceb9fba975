// The whole pipeline on one machine: a folder blob store, journaled in-process queues with SQS semantics,
// the five handlers run by the local runtime, S3 notifications emulated from the topology, and the learner
// as a Python subprocess started when the run-starter submits it.
import { existsSync, mkdirSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EmbeddedQueue } from '#shared/adapters/embedded/embedded-queue';
import { FolderBlobStore } from '#shared/adapters/embedded/folder-blob-store';
import { createEmbeddedQueues } from '#shared/adapters/embedded/queues';
import { kvCacheBytesFromEnv } from '#shared/deployment/function-env';
import { BlobPolicyProvider, type PolicyProvider } from '#shared/pipeline/policies';
import { RunResources, type RunResourcesOptions } from '#shared/pipeline/run-resources';
import { createStageHandlers, type StageContexts } from '#shared/pipeline/stages/handlers';
import type { PromptTokenCounter } from '#shared/pipeline/stages/run-starter';
import type { SpareCores } from '#shared/policy/slot-decoder';
import type { LearnerJobs } from '#shared/ports/learner-jobs';
import type { Log } from '#shared/ports/log';
import { silentLog } from '#shared/ports/log';
import type { QueueSet } from '#shared/ports/queue-set';
import type { StageContext } from '#shared/ports/stage-context';
import type { RunConfig } from '#shared/schemas/config/run';
import type { TrainerConfig } from '#shared/schemas/config/trainer';
import type { LearnerOutputLine } from '#shared/schemas/learner-stdio';
import { consumedQueue, FUNCTION_SENDS, type FunctionName, type QueueName } from '#shared/topology';
import type { InvocationResult } from './event-source-mapping.ts';
import { LearnerBridge } from './learner-bridge.ts';
import { type FunctionSettings, LocalRuntime } from './local-runtime.ts';
import { type Notifier, notifier, wireFolderNotifications } from './notifications.ts';
import { serveRedriveRequests } from './redrive-requests.ts';

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The learner's Python: TOOLRL_LEARNER_PYTHON, else the repo's gpu-worker venv. */
export const learnerPython = (): string =>
  process.env.TOOLRL_LEARNER_PYTHON ?? join(REPO_ROOT, 'gpu-worker/.venv/bin/python');

/**
 * Embedded visibility timeouts: long enough for one handler call on a slow CPU, short enough that a message
 * whose worker died comes back within minutes rather than Lambda-sized hours.
 */
export const EMBEDDED_VISIBILITY_SEC: Partial<Record<QueueName, number>> = {
  'run-events': 600,
  'policy-events': 120,
  rollout: 600,
  'tool-calls': 300,
  reward: 120,
};

/**
 * The rollout decoder's threads when the learner shares the machine: half the cores (1 of 2). The learner is the
 * busier side of an embedded run (bench/embedded: computing most of the RL stage while the rollouts idle most of
 * it), so torch keeps every core, and the two together ask for at most 1.5x the cores instead of 2x. While the
 * learner waits for groups the decoder borrows its cores (spareCores below); `--threads` fixes the count instead.
 */
export const embeddedOrtThreads = (cores = availableParallelism()): number =>
  Math.max(1, Math.floor(cores / 2));

const GIB = 2 ** 30;

/**
 * The rollout decoder's KV cache between turns when one process decodes a whole run: a sixth of the machine's
 * memory, at least 1 GiB (the default elsewhere) and at most 4 GiB. A SmolLM2-135M trajectory of ~290 tokens keeps
 * 13 MB (30 layers x 2 x 3 heads x 64 x 4 bytes a token), so 1 GiB holds about 80 of the 256-512 a run has in
 * flight when a validation overlaps training, and a pushed-out one rebuilds its cache pass by pass in a deterministic
 * run (shared/policy/policy.ts). The budget is a bound, not an allocation: a small model never reaches it.
 * `TOOLRL_KV_CACHE_MB`, when set, is the budget instead (as on Lambda).
 */
export const embeddedKvCacheBytes = (memory = totalmem(), env: NodeJS.ProcessEnv = process.env): number =>
  kvCacheBytesFromEnv(env) ?? Math.min(4 * GIB, Math.max(GIB, Math.floor(memory / 6)));

/**
 * The learner's environment in an embedded run: OpenMP workers that sleep when a parallel region ends instead of
 * spinning (libgomp spins by default), so between torch ops they do not hold a core a rollout is waiting for; and
 * a lifeline to this process.
 */
export const embeddedLearnerEnv = (env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv => ({
  OMP_WAIT_POLICY: env.OMP_WAIT_POLICY ?? 'PASSIVE',
  // The learner (and its torchrun ranks) dies with this process, even when it is killed with SIGKILL: it never
  // goes on alone into a run a `--resume` has started again (gpu-worker/toolrl_learner/lifeline.py).
  TOOLRL_DIE_WITH_PARENT: String(process.pid),
});

/**
 * Concurrency on one machine. Rollouts: as many requests in flight as the run can have (a deterministic run has at
 * most two batches of groups out, plus a validation), all decoded by the policy's one running batch, so they share
 * its decode steps (shared/policy/batcher.ts); tools in parallel.
 */
export const EMBEDDED_SETTINGS: Record<FunctionName, FunctionSettings> = {
  'run-starter': { maxConcurrency: 1 },
  feeder: { maxConcurrency: 1 },
  rollout: { maxConcurrency: 256, batchSize: 1 },
  'tool-call': { maxConcurrency: 4, maxBatchingWindowSec: 0 },
  reward: { maxConcurrency: 2, maxBatchingWindowSec: 0 },
};

export interface EmbeddedPipelineOptions {
  /** The workdir: the blob store's root (runs/<runId>/… below it). */
  readonly root: string;
  readonly runId: string;
  /** Where the queue journals live (default: runs/<runId>/queues under the root). */
  readonly journalDir?: string;
  readonly settings?: Partial<Record<FunctionName, FunctionSettings>>;
  /** ORT threads of the rollout sessions (default: embeddedOrtThreads()). */
  readonly ortThreads?: number;
  readonly python?: string;
  /** The learner's device (`toolrl train --learner-device`): cpu runs `trainer.num_gpus` ranks on gloo. */
  readonly learnerDevice?: 'cpu' | 'cuda';
  /** Local folder of the original config (tool configs, reward modules resolve against it). */
  readonly sourceDir?: string;
  readonly log?: Log;
  readonly onInvoke?: (r: InvocationResult) => void;
  readonly onLearnerLine?: (line: LearnerOutputLine) => void;
  /** Replaces the learner subprocess (tests of the pipeline alone). */
  readonly learnerJobs?: LearnerJobs;
  readonly policies?: PolicyProvider;
  readonly resources?: Partial<RunResourcesOptions>;
  readonly retryAfterSec?: number;
  readonly waitTimeSec?: number;
  /** Lets fault tests wrap a function's context (a queue that fails once, a store that crashes mid-way). */
  readonly wrapContext?: <C extends StageContext>(fn: FunctionName, ctx: C) => C;
}

export class EmbeddedPipeline {
  readonly blobs: FolderBlobStore;
  readonly queues: QueueSet<EmbeddedQueue>;
  readonly runtime: LocalRuntime;
  readonly resources: RunResources;
  readonly policies: PolicyProvider;
  readonly notify: Notifier;
  learner: LearnerBridge | undefined;
  private readonly unwire: () => void;
  private readonly log: Log;
  private redriveTimer: NodeJS.Timeout | undefined;
  private redriveServing: Promise<unknown> = Promise.resolve();
  /** Rollout decoder passes on its own threads and on all cores (spareCores), for the run's log. */
  private readonly decodePasses = { halfCores: 0, allCores: 0, differed: 0 };

  constructor(private readonly opts: EmbeddedPipelineOptions) {
    this.log = opts.log ?? silentLog;
    this.blobs = new FolderBlobStore(resolve(opts.root));
    this.queues = createEmbeddedQueues({
      journalDir: opts.journalDir ?? join(this.blobs.root, 'runs', opts.runId, 'queues'),
      visibilityTimeoutSec: EMBEDDED_VISIBILITY_SEC,
    });
    const scratchDir = join(this.blobs.root, '.scratch');
    this.resources = new RunResources(this.blobs, { scratchDir, ...opts.resources });
    this.policies =
      opts.policies ??
      new BlobPolicyProvider(this.blobs, {
        scratchDir,
        threads: opts.ortThreads ?? embeddedOrtThreads(),
        // Unless --threads fixed the count; the decoder ignores spare cores that are not more than its own.
        ...(opts.ortThreads === undefined ? { spare: this.spareCores(availableParallelism()) } : {}),
        cacheBytes: embeddedKvCacheBytes(),
      });
    this.notify = notifier(this.queues.queues, 'embedded');
    this.unwire = wireFolderNotifications(this.blobs, this.notify, (e) =>
      this.log.error('notification failed', { error: String(e) }),
    );
    const wrap = <C extends StageContext>(fn: FunctionName, ctx: C): C =>
      opts.wrapContext ? opts.wrapContext(fn, ctx) : ctx;
    const learnerJobs: LearnerJobs = opts.learnerJobs ?? {
      submit: async (run) => {
        this.startLearner(run.runId, run.config?.trainer);
        return { jobId: `embedded-${process.pid}` };
      },
    };
    this.runtime = new LocalRuntime({
      queues: this.queues.queues,
      handlers: createStageHandlers({
        'run-starter': wrap('run-starter', {
          ...this.context('run-starter'),
          learnerJobs,
          countPromptTokens: localPromptCounter,
          sourceDirOf: () => opts.sourceDir,
        }),
        feeder: wrap('feeder', { ...this.context('feeder'), resources: this.resources }),
        rollout: wrap('rollout', {
          ...this.context('rollout'),
          resources: this.resources,
          policies: this.policies,
        }),
        'tool-call': wrap('tool-call', { ...this.context('tool-call'), resources: this.resources }),
        reward: wrap('reward', { ...this.context('reward'), resources: this.resources }),
      } satisfies StageContexts),
      settings: { ...EMBEDDED_SETTINGS, ...opts.settings },
      waitTimeSec: opts.waitTimeSec ?? 20,
      retryAfterSec: opts.retryAfterSec ?? 1,
      log: this.log,
      ...(opts.onInvoke ? { onInvoke: opts.onInvoke } : {}),
    });
  }

  /**
   * The learner's cores for the rollout decoder while the learner waits for groups (LearnerBridge.idle): a pass then
   * runs on all `cores` (shared/policy/slot-decoder.ts, SpareCores; the same bits as on half of them). The learner
   * waits for rollouts for a large part of a real model's run (BENCHMARKS.md, "Embedded run: where the time goes"),
   * and before the first batch and after its last step it has nothing to do at all.
   */
  private spareCores(cores: number): SpareCores {
    return {
      threads: cores,
      free: () => this.learner?.idle ?? false,
      ran: (wide) => {
        if (wide) this.decodePasses.allCores++;
        else this.decodePasses.halfCores++;
      },
      differed: () => {
        // Said once a run: each policy version's decoder checks on its own and keeps half the cores if it differs.
        if (this.decodePasses.differed++ === 0)
          this.log.warn('the rollout decoder computed other bits on all cores than on half; it keeps half', {
            runId: this.opts.runId,
          });
      },
    };
  }

  /** The stage context of one function: the queues it may send to and its dead-letter queue. */
  context(fn: FunctionName): StageContext {
    const queues: Partial<Record<QueueName, EmbeddedQueue>> = {};
    for (const q of FUNCTION_SENDS[fn]) queues[q] = this.queues.queues[q];
    return {
      blobs: this.blobs,
      queues,
      deadLetter: this.queues.dlqs[consumedQueue(fn)],
      log: this.log,
      now: () => new Date(),
    };
  }

  /** Starts the event source mappings (all, or only the named functions). */
  start(only?: readonly FunctionName[]): void {
    if (!only) this.runtime.start();
    else for (const fn of only) this.runtime.mappings[fn]?.start();
    this.serveRedrives();
  }

  /** `toolrl redrive` of this run from another process: its requests are carried out here (redrive-requests.ts). */
  private serveRedrives(): void {
    if (this.redriveTimer) return;
    let busy = false;
    this.redriveTimer = setInterval(() => {
      if (busy) return;
      busy = true;
      this.redriveServing = serveRedriveRequests(this.blobs, this.queues, this.opts.runId)
        .catch((e) => this.log.error('redrive request failed', { error: String(e) }))
        .finally(() => {
          busy = false;
        });
    }, 1000);
    this.redriveTimer.unref();
  }

  /** Starts the learner subprocess of the run (once); `trainer` (the run's) sets how many processes. */
  startLearner(runId: string, trainer?: Pick<TrainerConfig, 'num_gpus' | 'cpu_offload'>): LearnerBridge {
    if (this.learner) return this.learner;
    if (runId !== this.opts.runId)
      throw new Error(`this pipeline serves run ${this.opts.runId}, not ${runId}`);
    const workdir = join(this.blobs.root, 'runs', runId, 'learner', 'work');
    mkdirSync(workdir, { recursive: true });
    this.learner = new LearnerBridge({
      python: this.opts.python ?? learnerPython(),
      root: this.blobs.root,
      runId,
      workdir,
      processes: trainer?.num_gpus ?? 1,
      sharded: trainer?.cpu_offload ?? false,
      ...(this.opts.learnerDevice ? { device: this.opts.learnerDevice } : {}),
      scoredGroups: this.queues.queues['scored-groups'],
      deadLetter: this.queues.dlqs['scored-groups'],
      notify: this.notify,
      logPath: join(this.blobs.root, 'runs', runId, 'learner.log'),
      env: embeddedLearnerEnv(),
      cwd: REPO_ROOT,
      log: this.log,
      ...(this.opts.onLearnerLine ? { onLine: this.opts.onLearnerLine } : {}),
    });
    this.learner.start();
    return this.learner;
  }

  /** Stops the functions (letting batches in hand finish), the learner, tools and policy sessions. */
  async stop(): Promise<void> {
    clearInterval(this.redriveTimer);
    await this.redriveServing; // a redrive under way finishes before its queues close
    await this.runtime.stop();
    if (this.learner?.running) await this.learner.terminate();
    this.unwire();
    await this.resources.close();
    // How often a continuation found its KV cache kept: each one lost re-prefilled (or rebuilt pass by pass).
    if (this.policies instanceof BlobPolicyProvider)
      this.log.info('rollout KV cache', { runId: this.opts.runId, ...this.policies.cacheStats() });
    const engine = this.policies.engineStats?.();
    if (engine && engine.prefillTokens + engine.decodeTokens > 0)
      this.log.info('rollout engine', { runId: this.opts.runId, ...engine });
    if (this.decodePasses.allCores + this.decodePasses.halfCores > 0)
      this.log.info('rollout decoder passes', { runId: this.opts.runId, ...this.decodePasses });
    await this.policies.close();
    await this.queues.close();
  }
}

/** Counts prompt tokens at run start when the model is a local folder with a tokenizer. */
async function localPromptCounter(config: RunConfig): Promise<PromptTokenCounter | undefined> {
  const dir = config.model.path;
  if (!existsSync(join(dir, 'tokenizer.json')) || !existsSync(join(dir, 'tokenizer_config.json')))
    return undefined;
  const { ChatTokenizer } = await import('#shared/policy/tokenizer');
  const tok = await ChatTokenizer.load(
    dir,
    config.model.chat_template !== undefined ? { chatTemplate: config.model.chat_template } : {},
  );
  return async (row) =>
    tok.encode(tok.render(row.prompt, row.extra_info.tools ?? [], { addGenerationPrompt: true })).length;
}
