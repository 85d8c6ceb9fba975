// One run as the viewer shows it, refreshed from its files as the run goes on: status, step metrics, batches,
// validation summaries, dead letters and the trajectory index. Every read is tolerant: what cannot be read
// becomes a Problem naming the file, and the rest is still shown.
import type { z } from 'zod';
import { mergeStage } from '#shared/config/merge';
import { type EvalSummary, EvalSummarySchema } from '#shared/pipeline/eval';
import { stageConfigOf } from '#shared/pipeline/run-resources';
import { type DeadLetterRecord, DeadLetterRecordSchema } from '#shared/schemas/dead-letter';
import { type LearnerState, LearnerStateSchema } from '#shared/schemas/learner-stdio';
import { type RunStatus, RunStatusSchema } from '#shared/schemas/run-status';
import { keys, parseKey } from '#shared/topology';
import { type AdvantageConfig, groupAdvantages } from './advantages.ts';
import type { ConfigSummary, MetricsData, Problem, QueueSamples, RunInfo } from './api.ts';
import { BATCHES_FILE, type BatchRecord, METRICS_FILE, readBatches, readMetrics } from './metrics.ts';
import type { RunSource } from './source.ts';
import { RunTokenizer } from './tokens.ts';
import { issuesText, TrajectoryIndex } from './trajectory-index.ts';

/** Samples of queue depth kept (at one per refresh, a few hours of a page left open). */
const MAX_QUEUE_SAMPLES = 4000;

interface Cached<T> {
  etag: string;
  value: T;
}

export class RunView {
  readonly index: TrajectoryIndex;
  readonly tokens: RunTokenizer;
  run: RunStatus | undefined;
  learner: LearnerState | undefined;
  metrics: MetricsData = { steps: [], values: {}, stageMarks: [], hasBatches: false };
  batches: BatchRecord[] = [];
  evals: EvalSummary[] = [];
  deadLetters: DeadLetterRecord[] = [];
  private found = false;
  private otherRuns: string[] = [];
  private fileProblems: Problem[] = [];
  private readonly evalCache = new Map<string, Cached<EvalSummary | Problem>>();
  private readonly deadCache = new Map<string, DeadLetterRecord | Problem>();
  private metricsEtag = '';
  private metricProblems: Problem[] = [];
  private indexProblem: Problem | undefined;
  private readonly queueSamples: { t: number[]; depths: Record<string, number[]> } = { t: [], depths: {} };
  private refreshing: Promise<void> | undefined;
  private indexing: Promise<void> | undefined;

  constructor(readonly source: RunSource) {
    this.index = new TrajectoryIndex(source.blobs, source.runId);
    this.tokens = new RunTokenizer(source.blobs, source.runId);
  }

  get runId(): string {
    return this.source.runId;
  }

  /** Re-reads what may have changed. Callers share a refresh in progress. */
  refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  /** The refresh and the index's reading of every manifest listed so far (tests wait on it; the page need not). */
  async settled(): Promise<void> {
    await this.refresh();
    await this.indexing;
  }

  private async doRefresh(): Promise<void> {
    const { blobs, runId } = this.source;
    const problems: Problem[] = [];
    const json = async <T>(key: string, schema: z.ZodType<T>): Promise<T | undefined> => {
      const body = await blobs.get(key);
      if (!body) return undefined;
      const r = safeJson(key, body, schema);
      if ('message' in r) problems.push(r);
      else return r.value;
      return undefined;
    };
    this.run = await json(keys.runJson(runId), RunStatusSchema);
    this.learner = await json(keys.learnerState(runId), LearnerStateSchema);
    // A run exists once its run.json or its input files do (listing the whole run would walk every object).
    this.found =
      this.run !== undefined ||
      problems.some((p) => p.key === keys.runJson(runId)) ||
      (await blobs.listKeys(keys.inputPrefix(runId))).length > 0;
    if (!this.found) this.otherRuns = await this.source.listRuns();

    // metrics.jsonl and batches.jsonl grow every step: read again only when one of them changed.
    const [metricsHead, batchesHead] = await Promise.all([
      blobs.head(keys.metrics(runId) + METRICS_FILE),
      blobs.head(keys.metrics(runId) + BATCHES_FILE),
    ]);
    const tag = `${metricsHead?.etag ?? ''}|${batchesHead?.etag ?? ''}`;
    if (tag !== this.metricsEtag) {
      const batches = await readBatches(blobs, runId);
      const m = await readMetrics(blobs, runId, batches.batches, batches.present);
      this.batches = batches.batches;
      this.metrics = m.data;
      this.metricProblems = [...batches.problems, ...m.problems];
      this.metricsEtag = tag;
    }
    problems.push(...this.metricProblems);
    const stepOf = new Map<string, number>();
    for (const b of this.batches) for (const g of b.group_ids) stepOf.set(g, b.step);
    this.index.stepOf = stepOf;

    this.evals = await this.readEvals(problems);
    this.deadLetters = await this.readDeadLetters(problems);
    this.fileProblems = problems;
    // The index reads manifests in the background: a large run's first read must not hold the page's answers.
    this.indexing ??= this.index
      .refresh()
      .then(
        () => {
          this.indexProblem = undefined;
        },
        (err: unknown) => {
          // A store that failed mid-listing (a network error): said on the page, tried again next refresh.
          this.indexProblem = {
            key: keys.groups(runId),
            message: `reading the groups failed: ${(err as Error).message}`,
          };
        },
      )
      .finally(() => {
        this.indexing = undefined;
      });
    if (this.indexProblem) problems.push(this.indexProblem);
    await this.sampleQueues();
  }

  private async readEvals(problems: Problem[]): Promise<EvalSummary[]> {
    const infos = await this.source.blobs.list(keys.evalSummaries(this.runId));
    const out: EvalSummary[] = [];
    for (const info of infos) {
      if (!parseKey('evalSummary', info.key)) continue;
      let hit = this.evalCache.get(info.key);
      if (!hit || hit.etag !== info.etag) {
        const body = await this.source.blobs.get(info.key);
        if (!body) continue;
        const r = safeJson(info.key, body, EvalSummarySchema);
        hit = { etag: info.etag, value: 'message' in r ? r : r.value };
        this.evalCache.set(info.key, hit);
      }
      if ('message' in hit.value && 'key' in hit.value) problems.push(hit.value as Problem);
      else out.push(hit.value as EvalSummary);
    }
    return out.sort((a, b) => a.policyVersion - b.policyVersion);
  }

  private async readDeadLetters(problems: Problem[]): Promise<DeadLetterRecord[]> {
    const out: DeadLetterRecord[] = [];
    for (const key of await this.source.blobs.listKeys(keys.deadLetters(this.runId))) {
      let hit = this.deadCache.get(key); // records are written once (put-if-absent)
      if (!hit) {
        const body = await this.source.blobs.get(key);
        if (!body) continue;
        const r = safeJson(key, body, DeadLetterRecordSchema);
        hit = 'message' in r ? r : r.value;
        this.deadCache.set(key, hit);
      }
      if ('schemaVersion' in hit) out.push(hit);
      else problems.push(hit);
    }
    return out;
  }

  private async sampleQueues(): Promise<void> {
    let depths: Record<string, number> | undefined;
    try {
      depths = await this.source.queueDepths();
    } catch {
      return; // no permission or no endpoint: the chart says there are no samples
    }
    if (!depths) return;
    const s = this.queueSamples;
    const n = s.t.length;
    s.t.push(Date.now() / 1000);
    for (const [q, d] of Object.entries(depths)) {
      const column = s.depths[q] ?? new Array<number>(n).fill(0);
      column.push(d);
      s.depths[q] = column;
    }
    if (s.t.length > MAX_QUEUE_SAMPLES) {
      s.t.shift();
      for (const c of Object.values(s.depths)) c.shift();
    }
  }

  queues(): QueueSamples {
    return { ...this.queueSamples, note: this.source.queueNote };
  }

  /** The run config a group was trained under (its curriculum stage's overrides applied). */
  advantageConfig(stage: string | null): AdvantageConfig | undefined {
    const config = this.run?.config;
    if (!config) return undefined;
    try {
      if (this.run?.resolved) return stageConfigOf(this.run.resolved, stage).algorithm;
      // A run.json written before stages were resolved in it: the same merge, here.
      const declared = config.stages?.find((s) => s.name === stage);
      return (declared ? mergeStage(config, declared) : config).algorithm;
    } catch {
      return config.algorithm;
    }
  }

  /** Advantages of a train group's samples in sample order, with how they were computed. */
  advantagesOf(
    split: 'train' | 'val',
    stage: string | null,
    rewards: readonly number[],
  ): { advantages: number[] | null; note: string } {
    if (split === 'val')
      return { advantages: null, note: 'validation groups are not trained: no advantages' };
    const cfg = this.advantageConfig(stage);
    if (!cfg)
      return { advantages: null, note: 'the run has no readable config (run.json): advantages unknown' };
    return groupAdvantages(rewards, cfg);
  }

  info(): RunInfo {
    const r = this.run;
    const l = this.learner;
    const progress = this.index.progress;
    const counts = {
      metricRows: this.metrics.steps.length,
      groups: this.index.groupCount,
      trainGroups: this.index.trainGroupCount,
      trajectories: this.index.trajectoryCount,
      evals: this.evals.length,
      deadLetters: this.deadLetters.length,
    };
    const problems = [...this.fileProblems, ...this.index.problems];
    return {
      runId: this.runId,
      where: this.source.where,
      found: this.found,
      otherRuns: this.found ? [] : this.otherRuns,
      status: r?.status ?? null,
      reason: r?.reason ?? null,
      createdAt: r?.createdAt ?? null,
      updatedAt: r?.updatedAt ?? null,
      name: r?.config?.name ?? null,
      learner: l
        ? { step: l.step, policyVersion: l.policyVersion, done: l.done, rewardMean: l.rewardMean }
        : null,
      groupsPlanned: r?.totals.groupsPlanned ?? null,
      config: r?.config ? configSummary(r) : null,
      revision: [
        r?.updatedAt,
        l?.updatedAt,
        this.metricsEtag,
        counts.groups,
        counts.evals,
        counts.deadLetters,
        progress.read,
        problems.length,
      ].join('|'),
      counts,
      indexing: progress,
      problems,
    };
  }

  close(): void {
    this.tokens.close();
  }
}

function configSummary(r: RunStatus): ConfigSummary {
  const c = r.config!;
  return {
    groupSize: c.rollout.n,
    batchPrompts: c.trainer.batch_prompts,
    publishEvery: c.trainer.publish_every,
    evalEvery: c.trainer.eval_every,
    advEstimator: c.algorithm.adv_estimator,
    stages: (c.stages ?? []).map((s) => s.name),
  };
}

/** A JSON object through its schema, or the Problem naming what is wrong. */
export function safeJson<T>(key: string, body: Uint8Array, schema: z.ZodType<T>): { value: T } | Problem {
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(body).toString('utf8'));
  } catch (err) {
    return { key, message: `not JSON (${(err as Error).message})` };
  }
  const r = schema.safeParse(json);
  if (!r.success) return { key, message: issuesText(r.error) };
  return { value: r.data };
}
