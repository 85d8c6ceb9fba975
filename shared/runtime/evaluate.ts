// `toolrl eval`: scores one policy on a dataset with a run's tools, reward and multi-turn settings, through the
// same rollout, tool-call and reward stages a run uses (embedded queues, a scratch folder store), and summarises it
// with the code that writes a run's validation summaries, so its numbers and `toolrl train`'s start/end lines are
// the same measurement. The policy is a rollout bundle, or a Hugging Face model folder (a checkpoint's `model/`),
// which is exported to a bundle first by the learner's own exporter.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { readDataset } from '#shared/data/dataset';
import { sendTo } from '#shared/pipeline/context';
import { type EvalSummary, EvalSummarySchema } from '#shared/pipeline/eval';
import type { PolicyLease, PolicyProvider } from '#shared/pipeline/policies';
import { runPromptTemplate } from '#shared/pipeline/prompt-type';
import { validationStarts } from '#shared/pipeline/stages/feeder';
import { BundleError } from '#shared/policy/bundle';
import { addStats, emptyStats, type LoopStats } from '#shared/policy/decode-loop';
import type { Policy } from '#shared/policy/policy';
import { silentLog } from '#shared/ports/log';
import type { RunConfig } from '#shared/schemas/config/run';
import { BundleManifestSchema } from '#shared/schemas/policy';
import type { RunStatus } from '#shared/schemas/run-status';
import { keys } from '#shared/topology';
import { EmbeddedPipeline, embeddedKvCacheBytes, learnerPython } from './embedded.ts';

const run = promisify(execFile);

export interface EvaluateOptions {
  /** A rollout bundle (manifest.json, model.onnx) or a Hugging Face model folder (config.json, safetensors). */
  readonly policyDir: string;
  /** The dataset (Parquet, or the formats `toolrl dataset` reads). */
  readonly dataPath: string;
  /** The run config whose tools, reward, prompt type and multi-turn limits apply. */
  readonly config: RunConfig;
  /** Where the config's relative paths (tool configs, reward modules, prompt templates) resolve. */
  readonly sourceDir: string;
  /** Samples per prompt, temperature, top-p, top-k: the config's `rollout.val_kwargs` unless given. */
  readonly n?: number;
  readonly temperature?: number;
  readonly topP?: number;
  readonly topK?: number;
  /** Rollout seed (`rollout.seed` unless given): each prompt's samples are seeded from it and the prompt's index. */
  readonly seed?: number;
  /** Offer no tools: the prompt has no tool schemas and every call the model still writes fails. */
  readonly noTools?: boolean;
  /** Only the first rows of the dataset. */
  readonly maxRows?: number;
  readonly ortThreads?: number;
  /** Told where the rollout engine's time went (prefill, decode passes, sampling) once the evaluation is done. */
  readonly onRollouts?: (stats: LoopStats) => void;
  /**
   * Keep the evaluation's run folder (every answer with its messages, tool calls and reward, under
   * `runs/<runId>/`) in this directory instead of a scratch folder removed at the end; `toolrl view` opens it.
   */
  readonly keepDir?: string;
  readonly python?: string;
  /** Called as groups finish: (scored prompts, all prompts). */
  readonly onProgress?: (done: number, total: number) => void;
}

/**
 * The policy version an evaluation samples and files its summary under (its groups are `val-v<N>-p<i>`): a run's
 * published bundle keeps its own version, so each prompt's sampling seed (derived from the group id) is the one the
 * run's validation of that version used and `toolrl eval` reproduces it; so does a checkpoint, exported under the
 * version it was current at (asBundle); a model folder is version 0.
 */
function bundleVersion(bundleDir: string): number {
  const manifest = join(bundleDir, 'manifest.json');
  return existsSync(manifest)
    ? BundleManifestSchema.parse(JSON.parse(readFileSync(manifest, 'utf8'))).version
    : 0;
}

export async function evaluate(opts: EvaluateOptions): Promise<EvalSummary> {
  const root = opts.keepDir ? keptRoot(opts.keepDir) : mkdtempSync(join(tmpdir(), 'toolrl-eval-'));
  try {
    const bundleDir = await asBundle(resolve(opts.policyDir), root, opts.python, opts.config.model);
    const version = bundleVersion(bundleDir);
    let rows = await readDataset(resolve(opts.dataPath));
    if (opts.maxRows !== undefined) rows = rows.slice(0, opts.maxRows);
    if (rows.length === 0) throw new Error(`${opts.dataPath} has no rows to evaluate`);
    const config = evalConfig(opts);
    const runId = `eval-${
      basename(opts.dataPath)
        .replace(/[^A-Za-z0-9._-]+/g, '-')
        .slice(0, 60) || 'data'
    }`;
    const now = new Date().toISOString();
    const status: RunStatus = {
      schemaVersion: 1,
      runId,
      status: 'running',
      reason: null,
      createdAt: now,
      updatedAt: now,
      config,
      input: { config: keys.config(runId), train: [], val: [], sourceDir: resolve(opts.sourceDir) },
      totals: { groupsPlanned: 0, trainPrompts: 0, valPrompts: rows.length, epochs: 0 },
      learner: { submittedAt: null, jobId: null },
      completedAt: null,
    };
    const policies = new DirPolicyProvider(bundleDir, version, opts.ortThreads, config.model.chat_template);
    const pipeline = new EmbeddedPipeline({
      root,
      runId,
      sourceDir: resolve(opts.sourceDir),
      log: silentLog,
      policies,
      learnerJobs: {
        submit: () => Promise.reject(new Error('toolrl eval starts no learner')),
      },
    });
    const summaryKey = keys.evalSummary(runId, version);
    let scored = 0;
    const done = new Promise<void>((resolveDone) => {
      pipeline.blobs.onPut((key) => {
        if (key === summaryKey) resolveDone();
        else if (key.startsWith(keys.groups(runId))) opts.onProgress?.(++scored, rows.length);
      });
    });
    try {
      await pipeline.blobs.put(keys.runJson(runId), JSON.stringify(status));
      pipeline.start(['rollout', 'tool-call', 'reward']);
      const template = config.data.prompt_type
        ? runPromptTemplate(config.data.prompt_type, resolve(opts.sourceDir))
        : undefined;
      const starts = validationStarts(
        status,
        version,
        rows.map((row, i) => ({ row, where: `row ${i} of ${opts.dataPath}` })),
        template,
      );
      await sendTo(pipeline.context('feeder'), 'rollout', runId, starts);
      await Promise.race([done, deadLetters(pipeline)]);
    } finally {
      await pipeline.stop();
    }
    const stats = policies.engineStats();
    if (stats) opts.onRollouts?.(stats);
    const text = await pipeline.blobs.get(summaryKey);
    if (!text) throw new Error('the evaluation ended without a summary');
    if (opts.keepDir) {
      // A kept folder is a finished run to whoever opens it (`toolrl view`, `toolrl status --workdir`).
      const end = new Date().toISOString();
      const finished: RunStatus = { ...status, status: 'completed', updatedAt: end, completedAt: end };
      await pipeline.blobs.put(keys.runJson(runId), JSON.stringify(finished));
    }
    return EvalSummarySchema.parse(JSON.parse(Buffer.from(text).toString('utf8')));
  } finally {
    if (!opts.keepDir) rmSync(root, { recursive: true, force: true });
  }
}

/** `dir` made ready to hold an evaluation's run folder: created when missing, refused when it already holds runs. */
function keptRoot(dir: string): string {
  const root = resolve(dir);
  if (existsSync(join(root, 'runs')))
    throw new Error(`${dir} already holds a runs/ folder: give --out an empty or new directory`);
  mkdirSync(root, { recursive: true });
  return root;
}

/** The run config with the evaluation's sampling (as validation samples) and, with --no-tools, no tools. */
function evalConfig(opts: EvaluateOptions): RunConfig {
  const c = opts.config;
  const vk = c.rollout.val_kwargs;
  return {
    ...c,
    rollout: {
      ...c.rollout,
      seed: opts.seed ?? c.rollout.seed,
      val_kwargs: {
        ...vk,
        n: opts.n ?? vk.n,
        temperature: opts.temperature ?? vk.temperature,
        top_p: opts.topP ?? vk.top_p,
        top_k: opts.topK ?? vk.top_k,
      },
    },
    tools: opts.noTools ? { tools: [] } : c.tools,
    // Validation summaries are written only for runs that validate.
    trainer: { ...c.trainer, eval_every: Math.max(1, c.trainer.eval_every) },
  };
}

/** Resolves when a dead-letter queue receives anything: an evaluation that lost a group would wait forever. */
async function deadLetters(pipeline: EmbeddedPipeline): Promise<never> {
  for (;;) {
    for (const [name, q] of Object.entries(pipeline.queues.dlqs)) {
      const depth = await q.depth();
      if (depth.visible + depth.inFlight + depth.delayed > 0)
        throw new Error(
          `a message went to the ${name} dead-letter queue during the evaluation (see the stage's error above); the summary would be incomplete`,
        );
    }
    await new Promise((r) => setTimeout(r, 500).unref());
  }
}

/** How a model folder or checkpoint is exported: as the run's learner exports its bundles (model.rollout_*). */
export type BundleExport = Pick<
  RunConfig['model'],
  'rollout_quantization' | 'rollout_quantization_block_size'
>;

/**
 * The policy version a checkpoint folder (`checkpoints/step-<S>/` or its `model/`) was current at, from its
 * completion marker (the learner's trainer state), so that its evaluation samples with the seeds the run's validation
 * of that version used; undefined for any other folder.
 */
function checkpointVersion(dir: string): number | undefined {
  const marker = join(basename(dir) === 'model' ? join(dir, '..') : dir, 'COMPLETE.json');
  if (!existsSync(marker)) return undefined;
  const version = (
    JSON.parse(readFileSync(marker, 'utf8')) as { trainerState?: { policy_version?: unknown } }
  ).trainerState?.policy_version;
  return Number.isInteger(version) && (version as number) >= 0 ? (version as number) : undefined;
}

/**
 * A bundle folder as it is; a Hugging Face model folder, or a checkpoint (`checkpoints/step-<S>/`: its full model, or
 * its LoRA adapter merged into the base model it names), exported into the scratch folder first. Given the run's
 * `model:` settings, the export quantises as the run's learner did (`model.rollout_quantization` and its block size),
 * and a checkpoint keeps its policy version: its evaluation is then the run's validation of that version again.
 */
export async function asBundle(
  dir: string,
  scratch: string,
  python?: string,
  exportAs?: BundleExport,
): Promise<string> {
  if (existsSync(join(dir, 'manifest.json')) && existsSync(join(dir, 'model.onnx'))) return dir;
  const source = existsSync(join(dir, 'config.json'))
    ? ['--model', dir]
    : existsSync(join(dir, 'model', 'config.json'))
      ? ['--model', join(dir, 'model')] // a checkpoint folder: checkpoints/step-<S>/
      : existsSync(join(dir, 'adapter', 'adapter_config.json'))
        ? ['--adapter', join(dir, 'adapter')] // a LoRA checkpoint: merged into its base_model_name_or_path
        : null;
  if (!source)
    throw new BundleError(
      `${dir} is neither a rollout bundle (manifest.json + model.onnx), a checkpoint (model/ or adapter/) nor a Hugging Face model folder (config.json)`,
    );
  const model = source[1]!;
  const out = join(scratch, 'bundle');
  try {
    const version = checkpointVersion(dir);
    const options = [
      ...(exportAs
        ? [
            '--quantization',
            exportAs.rollout_quantization,
            '--block-size',
            String(exportAs.rollout_quantization_block_size),
          ]
        : []),
      ...(version !== undefined ? ['--version', String(version)] : []),
    ];
    await run(
      python ?? learnerPython(),
      ['-m', 'toolrl_learner', 'export', ...source, ...options, '--out', out],
      {
        maxBuffer: 64 << 20,
      },
    );
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`exporting ${model} to a rollout bundle failed: ${(e.stderr || e.message).trim()}`);
  }
  return out;
}

/** Serves one bundle as every version of the evaluation run. */
class DirPolicyProvider implements PolicyProvider {
  private policy: Promise<Policy> | undefined;

  constructor(
    private readonly dir: string,
    private readonly version: number,
    private readonly threads?: number,
    /** The run's model.chat_template (its text): the prompts render as the run's rollouts rendered them. */
    private readonly chatTemplate?: string,
  ) {}

  async acquire(_runId: string, pinned: number | null): Promise<PolicyLease> {
    this.policy ??= import('#shared/policy/policy').then(({ loadPolicy }) =>
      loadPolicy(this.dir, {
        version: this.version,
        // One process decodes the whole evaluation (256 trajectories for 64 prompts x 4), as in an embedded run.
        cacheBytes: embeddedKvCacheBytes(),
        ...(this.threads ? { threads: this.threads } : {}),
        ...(this.chatTemplate !== undefined ? { chatTemplate: this.chatTemplate } : {}),
      }),
    );
    return { policy: await this.policy, version: pinned ?? this.version, release: () => {} };
  }

  private stats: LoopStats | undefined;

  engineStats(): LoopStats | undefined {
    return this.stats;
  }

  async close(): Promise<void> {
    if (!this.policy) return;
    const policy = await this.policy;
    this.stats = addStats(emptyStats(), policy.metrics);
    await policy.dispose();
  }
}

/** The run config of a policy inside a run folder (`runs/<id>/policy/v<N>`, `runs/<id>/checkpoints/step-<S>`). */
export function runConfigBeside(
  policyDir: string,
): { config: RunConfig; sourceDir: string; runJson: string } | null {
  let dir = resolve(policyDir);
  for (let i = 0; i < 4; i++) {
    const candidate = join(dir, 'run.json');
    if (existsSync(candidate)) {
      const status = JSON.parse(readFileSync(candidate, 'utf8')) as RunStatus;
      if (!status.config) return null;
      return { config: status.config, sourceDir: status.input.sourceDir ?? dir, runJson: candidate };
    }
    dir = resolve(dir, '..');
  }
  return null;
}
