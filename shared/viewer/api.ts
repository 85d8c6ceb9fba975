// What `toolrl view`'s server answers, shared by the server (shared/viewer/) and the page (shared/viewer/page/):
// types only, so the page's bundle takes nothing from the server's modules.
import type { DeadLetterRecord } from '#shared/schemas/dead-letter';
import type { FinishReason, Trajectory } from '#shared/schemas/trajectory';

/** A file (or line of one) the viewer could not read, and why. The page lists them; nothing is hidden. */
export interface Problem {
  readonly key: string;
  readonly message: string;
}

export interface RunInfo {
  readonly runId: string;
  /** Where the run is read from: `file:///…/runs/<id>/` or `s3://bucket/runs/<id>/`. */
  readonly where: string;
  /** False when the run has no folder (no object under its prefix) yet. */
  readonly found: boolean;
  /** Other runs at the same place, when this one is not found (to say which ids exist). */
  readonly otherRuns: readonly string[];
  readonly status: 'starting' | 'running' | 'completed' | 'failed' | null;
  readonly reason: string | null;
  readonly createdAt: string | null;
  readonly updatedAt: string | null;
  readonly name: string | null;
  readonly learner: { step: number; policyVersion: number; done: boolean; rewardMean: number | null } | null;
  readonly groupsPlanned: number | null;
  readonly config: ConfigSummary | null;
  /** Changes whenever something the page shows has changed (new rows, groups, summaries, dead letters). */
  readonly revision: string;
  readonly counts: {
    readonly metricRows: number;
    readonly groups: number;
    /** Of `groups`: train groups (the rest are validation groups). */
    readonly trainGroups: number;
    readonly trajectories: number;
    readonly evals: number;
    readonly deadLetters: number;
  };
  /** Group manifests listed and those read so far (the first read of a large run takes a while). */
  readonly indexing: { readonly listed: number; readonly read: number };
  readonly problems: readonly Problem[];
}

export interface ConfigSummary {
  readonly groupSize: number;
  readonly batchPrompts: number;
  readonly publishEvery: number;
  readonly evalEvery: number;
  readonly advEstimator: string;
  readonly stages: readonly string[];
}

/** metrics.jsonl by column, for the charts: `values[name][i]` belongs to `steps[i]`. */
export interface MetricsData {
  readonly steps: readonly number[];
  readonly values: Readonly<Record<string, readonly (number | null)[]>>;
  /** The first step trained under each curriculum stage (from batches.jsonl); empty without one. */
  readonly stageMarks: readonly { readonly step: number; readonly stage: string }[];
  /** Whether the run records which groups each step trained (metrics/batches.jsonl). */
  readonly hasBatches: boolean;
}

/** Queue depths the server sampled while it ran (nothing records them over time in the run itself). */
export interface QueueSamples {
  /** Unix seconds of each sample. */
  readonly t: readonly number[];
  readonly depths: Readonly<Record<string, readonly number[]>>;
  /** What the numbers count. */
  readonly note: string;
}

export interface TrajectoryRow {
  readonly groupId: string;
  readonly sampleIndex: number;
  readonly split: 'train' | 'val';
  readonly promptId: string;
  readonly prompt: string;
  readonly dataSource: string;
  readonly stage: string | null;
  /** The learner step that trained the group (metrics/batches.jsonl); null when not (yet) known. */
  readonly step: number | null;
  /** Lowest and highest policy version that sampled a turn. */
  readonly versions: readonly [number, number] | null;
  readonly reward: number;
  readonly finishReason: FinishReason;
  readonly turns: number;
  readonly toolCalls: number;
  /** Calls that failed (a typed tool error) plus malformed calls (parse errors). */
  readonly failedToolCalls: number;
  readonly responseTokens: number;
}

export interface TrajectoryPage {
  readonly total: number;
  readonly offset: number;
  readonly rows: readonly TrajectoryRow[];
  /** Values to offer in the filters. */
  readonly facets: {
    readonly finishReasons: readonly string[];
    readonly versions: readonly number[];
    readonly steps: readonly [number, number] | null;
  };
}

/** One trajectory as the page shows it: the stored record with its tokens' text and the group's context. */
export interface TrajectoryDetail {
  readonly groupId: string;
  readonly split: 'train' | 'val';
  readonly promptId: string;
  readonly dataSource: string;
  readonly stage: string | null;
  readonly step: number | null;
  readonly groupSize: number;
  readonly trajectory: Trajectory;
  /** The sample's advantage as the run's estimator computes it from the group's rewards; null when not outcome-level. */
  readonly advantage: number | null;
  /** Text of each token on its own; null when the run's tokenizer could not be loaded (`tokenProblem` says why). */
  readonly pieces: readonly string[] | null;
  readonly tokenProblem: string | null;
}

export interface GroupSample {
  readonly sampleIndex: number;
  readonly reward: number;
  readonly rewardComponents: Readonly<Record<string, number>>;
  readonly advantage: number | null;
  readonly finishReason: FinishReason;
  readonly versions: readonly [number, number] | null;
  readonly toolCalls: readonly {
    name: string;
    arguments: unknown;
    ok: boolean;
    output: string;
    error: string | null;
  }[];
  /** The model's last turn, as text. */
  readonly answer: string;
}

export interface GroupDetail {
  readonly groupId: string;
  readonly split: 'train' | 'val' | null;
  readonly promptId: string | null;
  readonly prompt: string;
  readonly dataSource: string | null;
  readonly stage: string | null;
  readonly step: number | null;
  /** `manifest`: the complete group; `trajectories`: only the samples scored so far (no manifest: in progress or dropped). */
  readonly source: 'manifest' | 'trajectories' | 'none';
  /** How the advantages were computed, or why there are none. */
  readonly advantageNote: string;
  readonly samples: readonly GroupSample[];
  readonly deadLetters: readonly DeadLetterRecord[];
  readonly problems: readonly Problem[];
}

/** One validation prompt's result under each evaluated version. */
export interface ValidationPrompt {
  readonly promptId: string;
  readonly question: string;
  readonly dataSource: string;
  /** version -> mean reward and mean accuracy (null without an accuracy component) of its samples. */
  readonly byVersion: Readonly<Record<string, { reward: number; accuracy: number | null; groupId: string }>>;
}

export interface ValidationOverview {
  readonly versions: readonly number[];
  readonly accuracyComponent: string | null;
  readonly prompts: readonly ValidationPrompt[];
}

export interface ValidationCompare {
  readonly promptId: string;
  readonly question: string;
  readonly accuracyComponent: string | null;
  readonly versions: readonly { readonly version: number; readonly group: GroupDetail }[];
}

export interface DeadLetterView {
  readonly records: readonly (DeadLetterRecord & { readonly groupScored: boolean })[];
  readonly byStage: Readonly<
    Record<
      string,
      { messages: number; groups: number; reasons: readonly { reason: string; count: number }[] }
    >
  >;
  readonly problems: readonly Problem[];
}

/** The fields of a validation summary (metrics/eval/v<N>.json, EvalSummarySchema) the page reads. */
export interface EvalPoint {
  readonly policyVersion: number;
  readonly accuracy: number | null;
  readonly accuracyComponent: string | null;
  readonly passAtK?: number | null;
  readonly rewardMean: number;
  readonly toolCallValidity?: number | null;
  readonly samplesPerPrompt?: number;
}
