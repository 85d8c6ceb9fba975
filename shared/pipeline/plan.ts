// The run's walk over curriculum stages, epochs and prompts: position p of the walk is one train group.
// It is a pure function of the config and the datasets' row counts, so the feeder only stores a position.
import { createHash } from 'node:crypto';
import { samplingStream } from '#shared/policy/rng';
import type { RunConfig } from '#shared/schemas/config/run';
import { trainIds } from '#shared/schemas/messages/group-ref';

export interface PlanStage {
  readonly index: number;
  /** The curriculum stage's name; null for a run without `stages`. */
  readonly name: string | null;
  /** Blob keys of the stage's train datasets, concatenated in this order. */
  readonly trainKeys: readonly string[];
  readonly epochs: number;
  readonly rows: number;
  /** The stage's `data.shuffle`, else the run's. */
  readonly shuffle: boolean;
  /** The stage's `data.prompt_type`, else the run's (see prompts.ts). */
  readonly promptType: string | undefined;
}

export interface GroupSlot {
  readonly stage: PlanStage;
  readonly epoch: number;
  /** Row index within the stage's concatenated datasets. */
  readonly row: number;
  readonly promptId: string;
  readonly groupId: string;
}

const asList = (v: string | string[] | undefined): string[] =>
  v === undefined ? [] : Array.isArray(v) ? v : [v];

/** The stages of a resolved config with their row counts (`rows(key)` counts one dataset). */
export function planStages(config: RunConfig, rows: (key: string) => number): PlanStage[] {
  const run = { shuffle: config.data.shuffle, promptType: config.data.prompt_type };
  const stages = config.stages?.length
    ? config.stages.map((s, index) => ({
        index,
        name: s.name,
        trainKeys: asList(s.data.train),
        epochs: s.epochs,
        shuffle: s.data.shuffle ?? run.shuffle,
        promptType: s.data.prompt_type ?? run.promptType,
      }))
    : [{ index: 0, name: null, trainKeys: asList(config.data.train), epochs: config.trainer.epochs, ...run }];
  return stages.map((s) => ({ ...s, rows: s.trainKeys.reduce((n, k) => n + rows(k), 0) }));
}

export const groupsPlanned = (stages: readonly PlanStage[]): number =>
  stages.reduce((n, s) => n + s.rows * s.epochs, 0);

/** The group at `position` of the walk, or undefined past its end; each stage shuffled as its `shuffle` says. */
export function groupAt(
  stages: readonly PlanStage[],
  position: number,
  opts: { seed: number },
): GroupSlot | undefined {
  let p = position;
  for (const stage of stages) {
    const size = stage.rows * stage.epochs;
    if (p < size) {
      const epoch = Math.floor(p / stage.rows);
      const i = p % stage.rows;
      const row = stage.shuffle ? permutation(opts.seed, stage.index, epoch, stage.rows)[i]! : i;
      return { stage, epoch, row, ...trainIds(stage.name === null ? null : stage.index, epoch, row) };
    }
    p -= size;
  }
  return undefined;
}

const permutations = new Map<string, number[]>();

/** A seeded Fisher-Yates shuffle of 0..n-1 for one (stage, epoch); cached because the feeder asks often. */
function permutation(seed: number, stage: number, epoch: number, n: number): number[] {
  const cacheKey = `${seed}:${stage}:${epoch}:${n}`;
  const hit = permutations.get(cacheKey);
  if (hit) return hit;
  const rng = samplingStream(seed, stage, epoch);
  const perm = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [perm[i], perm[j]] = [perm[j]!, perm[i]!];
  }
  if (permutations.size > 64) permutations.clear();
  permutations.set(cacheKey, perm);
  return perm;
}

/** The sampling seed of a group: a hash of the run's rollout seed and the group id (same on every redelivery). */
export function groupSeed(rolloutSeed: number, groupId: string): number {
  const h = createHash('sha256').update(`${rolloutSeed}:${groupId}`).digest();
  return h.readUIntBE(0, 6);
}

/** The learner's checkpoint cadence when neither trainer.save_every nor trainer.save_every_epochs is set. */
export const DEFAULT_SAVE_EVERY = 10;

/**
 * The config with its checkpoint cadence in learner steps, as the learner reads it (`trainer.save_every`, and per
 * curriculum stage in its overrides): `save_every_epochs` becomes epochs x rows / batch_prompts of each stage.
 */
export function resolveSaveEvery(config: RunConfig, stages: readonly PlanStage[]): RunConfig {
  const steps = (epochs: number, rows: number, batch: number) =>
    Math.max(1, Math.round((epochs * rows) / batch));
  const top = config.trainer;
  if (top.save_every_epochs === undefined)
    return { ...config, trainer: { ...top, save_every: top.save_every ?? DEFAULT_SAVE_EVERY } };
  const { save_every_epochs: epochs, ...rest } = top;
  if (!config.stages) {
    const rows = stages[0]?.rows ?? 0;
    return { ...config, trainer: { ...rest, save_every: steps(epochs, rows, top.batch_prompts) } };
  }
  return {
    ...config,
    trainer: { ...rest, save_every: steps(epochs, stages[0]?.rows ?? 0, top.batch_prompts) },
    stages: config.stages.map((s, i) => {
      const trainer = (s.overrides.trainer ?? {}) as Record<string, unknown>;
      if (trainer.save_every !== undefined) return s; // the stage's own step cadence
      const batch = typeof trainer.batch_prompts === 'number' ? trainer.batch_prompts : top.batch_prompts;
      const stageEpochs = typeof trainer.save_every_epochs === 'number' ? trainer.save_every_epochs : epochs;
      const { save_every_epochs: _, ...own } = trainer;
      return {
        ...s,
        overrides: {
          ...s.overrides,
          trainer: { ...own, save_every: steps(stageEpochs, stages[i]?.rows ?? 0, batch) },
        },
      };
    }),
  };
}
