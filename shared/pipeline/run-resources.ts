// What the stages load once per run and keep for the life of the process (a Lambda container, or the
// embedded runtime): the resolved config (per curriculum stage), dataset rows, the tool registry and the
// reward function.
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { AgentRunner } from '#shared/agent/runner';
import { ConfigError, resolveRun, toolsFilesOf } from '#shared/config/resolve';
import { readDatasetObject } from '#shared/data/dataset-file';
import { chatTemplateRefusal } from '#shared/policy/chat-templates';
import type { BlobStore } from '#shared/ports/blob-store';
import { PermanentError } from '#shared/ports/errors';
import type { RewardFn } from '#shared/rewards/types';
import type { RunConfig } from '#shared/schemas/config/run';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import type { ResolvedRun, RunStatus } from '#shared/schemas/run-status';
import type { ToolRegistry } from '#shared/tools/registry';
import type { TokenCounter } from '#shared/tools/token-counter';
import { keys } from '#shared/topology';
import { inputName, rewardCodeFromUpload, toolCodeFromUpload } from './run-config.ts';
import { readRunStatus } from './run-status.ts';
import { runTokenCounter, runTokenizerDir } from './run-tokenizer.ts';

/** The tool registry of shared/tools. */
export type ToolsHandle = ToolRegistry;

/** The run's combined reward of shared/rewards. */
export type RewardScorer = RewardFn;

export interface RunResourcesOptions {
  /** Where remote inputs (tool configs, reward modules) are materialised; /tmp on Lambda. */
  readonly scratchDir: string;
  /**
   * Builds the tool registry of a config (defaults to shared/tools' buildToolRegistry). `countTokens` counts with
   * the run's tokenizer when `tool_response_truncate_unit` is `tokens` (undefined before the run has a policy, and
   * for the default unit, characters).
   */
  readonly buildTools?: (
    config: RunConfig,
    baseDir: string,
    extras?: { countTokens?: TokenCounter },
  ) => Promise<ToolsHandle>;
  /** Builds the reward of a config (defaults to shared/rewards' buildReward). */
  readonly buildReward?: (config: RunConfig, baseDir: string) => Promise<RewardScorer>;
}

/** A stage's config in a run's `resolved` (null: the run's own); an unknown stage is a permanent error. */
export function stageConfigOf(resolved: ResolvedRun, stage: string | null): RunConfig {
  if (stage === null) return resolved.run;
  const config = resolved.stages[stage];
  if (!config) throw new PermanentError(`the run config has no curriculum stage named ${stage}`);
  return config;
}

export class RunResources {
  private readonly statuses = new Map<string, Promise<RunStatus>>();
  private readonly resolvedRuns = new Map<string, Promise<ResolvedRun>>();
  private readonly datasets = new Map<string, Promise<DatasetRow[]>>();
  private readonly baseDirs = new Map<string, Promise<string>>();
  private readonly tools = new Map<string, Promise<ToolsHandle>>();
  private readonly rewards = new Map<string, Promise<RewardScorer>>();
  private readonly tokenCounters = new Map<string, Promise<TokenCounter | undefined>>();
  private readonly templateChecks = new Map<string, Promise<string | null | undefined>>();
  private readonly statefulTools = new Map<string, Promise<boolean>>();
  private readonly agents = new Map<string, Promise<AgentRunner | undefined>>();

  constructor(
    private readonly blobs: BlobStore,
    private readonly opts: RunResourcesOptions,
  ) {}

  /** run.json of a started run (cached: the config in it never changes). */
  runStatus(runId: string): Promise<RunStatus> {
    return memo(this.statuses, runId, async () => {
      const s = await readRunStatus(this.blobs, runId);
      if (!s) throw new Error(`run ${runId} has no run.json yet`);
      if (!s.config)
        throw new PermanentError(`run ${runId} has no resolved config (status ${s.status}: ${s.reason})`);
      return s;
    });
  }

  /**
   * The config a stage of the run runs with (null: the run's own, for groups of no curriculum stage), looked up in
   * run.json's `resolved`. A run.json without it (written by an earlier toolrl, or by hand) is resolved here once.
   */
  async config(runId: string, stage: string | null = null): Promise<RunConfig> {
    return stageConfigOf(await this.resolved(runId), stage);
  }

  /** run.json's `resolved` (see config). */
  resolved(runId: string): Promise<ResolvedRun> {
    return memo(this.resolvedRuns, runId, async () => {
      const s = await this.runStatus(runId);
      if (s.resolved) return s.resolved;
      const base = await this.baseDir(runId);
      // A tools file next to the config, or (remote inputs, stored flat) under its file name.
      const read = (file: string) =>
        [resolve(base, file), join(base, inputName(file))]
          .map((p) => (existsSync(p) ? readFileSync(p, 'utf8') : undefined))
          .find((t) => t !== undefined);
      try {
        const files = new Map(toolsFilesOf(s.config!).map((f) => [f, read(f)] as const));
        return resolveRun(s.config!, (f) => files.get(f));
      } catch (err) {
        if (err instanceof ConfigError) throw new PermanentError(`run ${runId}: ${err.message}`);
        throw err;
      }
    });
  }

  /** The rows of one dataset of the run (a blob key). */
  rows(key: string): Promise<DatasetRow[]> {
    return memo(this.datasets, key, async () => {
      const data = await this.blobs.get(key);
      if (!data) throw new PermanentError(`dataset ${key} not found`);
      return readDatasetObject(key, data);
    });
  }

  /** The folder tool configs and reward modules are resolved against. */
  baseDir(runId: string): Promise<string> {
    return memo(this.baseDirs, runId, async () => {
      const s = await this.runStatus(runId);
      if (s.input.sourceDir && existsSync(s.input.sourceDir)) return s.input.sourceDir;
      const local = this.blobs.localPath?.(keys.inputPrefix(runId));
      if (local && existsSync(local)) return local;
      // A remote store: copy the run's small input files (not the datasets) next to each other.
      const dir = join(this.opts.scratchDir, runId, 'input');
      for (const info of await this.blobs.list(keys.inputPrefix(runId))) {
        if (info.key.endsWith('.parquet')) continue;
        const data = await this.blobs.get(info.key);
        if (!data) continue;
        const path = join(dir, info.key.slice(keys.inputPrefix(runId).length));
        await mkdir(dirname(path), { recursive: true });
        await writeFile(path, data);
      }
      return dir;
    });
  }

  /** The run's tool registry (one per run and stage per process; servers it starts live until close). */
  toolRegistry(runId: string, stage: string | null): Promise<ToolsHandle> {
    return memo(this.tools, `${runId}\u0000${stage}`, async () => {
      const config = await this.config(runId, stage);
      const base = await this.baseDir(runId);
      // Characters (verl's unit) need no tokenizer; tokens are counted with the run's own.
      const countTokens =
        config.rollout.multi_turn.tool_response_truncate_unit === 'tokens'
          ? await this.tokenCounter(runId)
          : undefined;
      return (this.opts.buildTools ?? defaultBuildTools)(
        (await this.fromSource(runId)) ? config : toolCodeFromUpload(config),
        base,
        { countTokens },
      );
    });
  }

  /**
   * Whether the run's tools (of a stage) include ones with per-trajectory state (Python tools), read from the config
   * alone: the reward stage ends their instances, and builds no registry for runs that have none.
   */
  hasStatefulTools(runId: string, stage: string | null): Promise<boolean> {
    return memo(this.statefulTools, `${runId}\u0000${stage}`, async () => {
      const config = await this.config(runId, stage);
      await import('#shared/bfcl/register-tool'); // BFCL's tool kind joins the built-ins
      const { toolSpecsOf } = await import('#shared/tools/specs');
      const { toolSource } = await import('#shared/tools/kinds');
      const specs = toolSpecsOf(config.tools, await this.baseDir(runId));
      return specs.some((s) => {
        try {
          return toolSource(s).type === 'python';
        } catch {
          return false; // an unknown kind fails the registry, which says why
        }
      });
    });
  }

  /**
   * Counts tokens with the run's tokenizer (policy v0's files; only those are fetched from a remote store), loaded
   * once per run per process; undefined while the run has no policy v0 (tool outputs are then cut in characters).
   */
  tokenCounter(runId: string): Promise<TokenCounter | undefined> {
    return memo(this.tokenCounters, runId, () => runTokenCounter(this.blobs, runId, this.opts.scratchDir));
  }

  /**
   * Why the run's chat template (model.chat_template, else policy v0's) cannot train tool use, or null when it
   * renders tool schemas and tool results; undefined while the run has no policy v0 to read it from.
   */
  chatTemplateRefusal(runId: string): Promise<string | null | undefined> {
    return memo(this.templateChecks, runId, async () => {
      const dir = await runTokenizerDir(this.blobs, runId, this.opts.scratchDir);
      if (dir === null) {
        this.templateChecks.delete(runId); // ask again once v0 is published
        return undefined;
      }
      const config = await this.config(runId);
      const override = config.model.chat_template;
      const { ChatTokenizer } = await import('#shared/policy/tokenizer');
      const tok = await ChatTokenizer.load(dir, override !== undefined ? { chatTemplate: override } : {});
      return chatTemplateRefusal(config.model.path, tok, override !== undefined);
    });
  }

  /**
   * The run's reward (per stage), its code imported here and nowhere earlier. From the config's own folder for an
   * embedded run (the author's machine); otherwise from the run's uploaded input files only (rewardCodeFromUpload).
   */
  reward(runId: string, stage: string | null): Promise<RewardScorer> {
    return memo(this.rewards, `${runId}\u0000${stage}`, async () => {
      const config = await this.config(runId, stage);
      const base = await this.baseDir(runId);
      const fromSource = await this.fromSource(runId);
      return (this.opts.buildReward ?? defaultBuildReward)(
        fromSource ? config : rewardCodeFromUpload(config),
        base,
      );
    });
  }

  /** Whether the run's code is read from the author's own folder (an embedded run), not its uploaded inputs. */
  private async fromSource(runId: string): Promise<boolean> {
    return (await this.baseDir(runId)) === (await this.runStatus(runId)).input.sourceDir;
  }

  /**
   * The run's agent (`rollout.agent`, per stage), loaded here once: undefined when the run has none. As the reward's
   * code, from the config's own folder for an embedded run, otherwise the copy the run uploaded. Throws
   * AgentLoadError when the file or its function cannot be loaded.
   */
  agent(runId: string, stage: string | null): Promise<AgentRunner | undefined> {
    return memo(this.agents, `${runId}\u0000${stage}`, async () => {
      const spec = (await this.config(runId, stage)).rollout.agent;
      if (!spec) return undefined;
      const base = await this.baseDir(runId);
      const fromSource = await this.fromSource(runId);
      const { resolveUserFile } = await import('#shared/tools/python/tool');
      const { loadAgent } = await import('#shared/agent/runner');
      return loadAgent(spec, resolveUserFile(base, fromSource ? spec.path : inputName(spec.path)), base);
    });
  }

  /** Closes tool registries (servers, sandboxes, Python hosts), the rewards' and the agents' Python hosts. */
  async close(): Promise<void> {
    const all = [...this.tools.values()];
    const rewards = [...this.rewards.values()];
    const agents = [...this.agents.values()];
    this.tools.clear();
    this.rewards.clear();
    this.agents.clear();
    await Promise.allSettled([
      ...all.map(async (p) => (await p).close()),
      ...rewards.map(async (p) => (await p).close?.()),
      ...agents.map(async (p) => (await p)?.close()),
    ]);
  }
}

async function defaultBuildTools(
  config: RunConfig,
  baseDir: string,
  extras: { countTokens?: TokenCounter } = {},
): Promise<ToolsHandle> {
  await import('#shared/bfcl/register-tool'); // BFCL's tool kind joins the built-ins
  const { buildToolRegistry } = await import('#shared/tools/registry');
  const mt = config.rollout.multi_turn;
  return buildToolRegistry(config.tools, {
    baseDir,
    truncate: {
      maxLength: mt.max_tool_response_length,
      side: mt.tool_response_truncate_side,
      countTokens: extras.countTokens,
    },
  });
}

async function defaultBuildReward(config: RunConfig, baseDir: string): Promise<RewardScorer> {
  await import('#shared/bfcl/register-reward'); // BFCL's reward joins the built-ins
  const { buildReward } = await import('#shared/rewards/index');
  return buildReward(config.reward, { baseDir });
}

/** Caches a promise per key; a rejected one is forgotten so the next call retries. */
function memo<T>(map: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  const hit = map.get(key);
  if (hit) return hit;
  const p = make();
  map.set(key, p);
  p.catch(() => {
    if (map.get(key) === p) map.delete(key);
  });
  return p;
}
