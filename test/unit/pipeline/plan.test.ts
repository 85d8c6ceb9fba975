// The run's walk over stages, epochs and prompts (what the feeder issues, position by position).
import { describe, expect, it } from 'vitest';
import { groupAt, groupSeed, groupsPlanned, planStages, resolveSaveEvery } from '#shared/pipeline/plan';
import { type RunConfig, RunConfigSchema } from '#shared/schemas/config/run';

const config = (over: Record<string, unknown>): RunConfig =>
  RunConfigSchema.parse({ model: { path: 'tiny' }, data: { train: 'a.parquet' }, ...over });
const rows = (counts: Record<string, number>) => (k: string) => counts[k] ?? 0;

describe('plan', () => {
  it('without stages: rows x epochs groups, epoch-major, ids e<epoch>-p<row>', () => {
    const c = config({ data: { train: ['a.parquet', 'b.parquet'], shuffle: false }, trainer: { epochs: 2 } });
    const stages = planStages(c, rows({ 'a.parquet': 2, 'b.parquet': 1 }));
    // 3 rows (2 + 1) x 2 epochs = 6 groups
    expect(groupsPlanned(stages)).toBe(6);
    const ids = Array.from({ length: 7 }, (_, p) => groupAt(stages, p, { seed: 0 })?.groupId);
    expect(ids).toEqual(['e0-p0', 'e0-p1', 'e0-p2', 'e1-p0', 'e1-p1', 'e1-p2', undefined]);
  });

  it('with stages: each stage its own data and epochs, ids scoped by stage', () => {
    const c = config({
      data: { train: 'a.parquet', shuffle: false },
      stages: [
        { name: 'format', data: { train: 'f.parquet' }, epochs: 1 },
        { name: 'full', data: { train: 'a.parquet' }, epochs: 2 },
      ],
    });
    const stages = planStages(c, rows({ 'f.parquet': 2, 'a.parquet': 1 }));
    // 2 x 1 + 1 x 2 = 4
    expect(groupsPlanned(stages)).toBe(4);
    const slots = Array.from({ length: 4 }, (_, p) => groupAt(stages, p, { seed: 0 })!);
    expect(slots.map((s) => [s.stage.name, s.groupId])).toEqual([
      ['format', 's0-e0-p0'],
      ['format', 's0-e0-p1'],
      ['full', 's1-e0-p0'],
      ['full', 's1-e1-p0'],
    ]);
  });

  it('shuffles each epoch with a seeded permutation: every row once per epoch, same order for the same seed', () => {
    const stages = planStages(config({ trainer: { epochs: 2 } }), rows({ 'a.parquet': 50 }));
    const epoch = (e: number, seed: number) =>
      Array.from({ length: 50 }, (_, i) => groupAt(stages, e * 50 + i, { seed })!.row);
    const e0 = epoch(0, 1);
    expect([...e0].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(e0).not.toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(epoch(0, 1)).toEqual(e0);
    expect(epoch(1, 1)).not.toEqual(e0);
    expect(epoch(0, 2)).not.toEqual(e0);
  });

  it("a stage's data.shuffle and prompt_type override the run's; unset, the run's apply", () => {
    const c = config({
      data: { train: 'a.parquet', shuffle: false, prompt_type: 'toolcall' },
      stages: [
        { name: 'format', data: { train: 'f.parquet', shuffle: true, prompt_type: './format.yaml' } },
        { name: 'full', data: { train: 'a.parquet' } },
      ],
    });
    const stages = planStages(c, rows({ 'f.parquet': 20, 'a.parquet': 20 }));
    expect(stages.map((s) => [s.name, s.shuffle, s.promptType])).toEqual([
      ['format', true, './format.yaml'],
      ['full', false, 'toolcall'],
    ]);
    const order = (from: number) =>
      Array.from({ length: 20 }, (_, i) => groupAt(stages, from + i, { seed: 0 })!.row);
    const inOrder = Array.from({ length: 20 }, (_, i) => i);
    expect(order(0)).not.toEqual(inOrder); // format: shuffled
    expect([...order(0)].sort((a, b) => a - b)).toEqual(inOrder);
    expect(order(20)).toEqual(inOrder); // full: the run's shuffle: false
  });

  it('a group seed depends on the rollout seed and the group id only', () => {
    expect(groupSeed(0, 'e0-p1')).toBe(groupSeed(0, 'e0-p1'));
    expect(groupSeed(0, 'e0-p1')).not.toBe(groupSeed(0, 'e0-p2'));
    expect(groupSeed(1, 'e0-p1')).not.toBe(groupSeed(0, 'e0-p1'));
    expect(Number.isSafeInteger(groupSeed(0, 'x'))).toBe(true);
  });
});

describe('save_every_epochs', () => {
  const base = { model: { path: 'tiny' }, data: { train: 'a.parquet' } };
  it('is epochs x rows / batch_prompts learner steps, at least 1', () => {
    const config = RunConfigSchema.parse({ ...base, trainer: { batch_prompts: 8, save_every_epochs: 5 } });
    const stages = planStages(config, () => 24); // 24 rows, 8 per step: 3 steps an epoch
    expect(resolveSaveEvery(config, stages).trainer).toMatchObject({ save_every: 15 });
    expect(resolveSaveEvery(config, stages).trainer.save_every_epochs).toBeUndefined();
    expect(
      resolveSaveEvery(
        config,
        planStages(config, () => 1),
      ).trainer.save_every,
    ).toBe(1);
  });

  it('per curriculum stage, with the stage batch size (the BFCL example: 16 then 32 prompts a step)', () => {
    const config = RunConfigSchema.parse({
      ...base,
      trainer: { batch_prompts: 32, save_every_epochs: 5 },
      stages: [
        { name: 'format', data: { train: 'f.parquet' }, overrides: { trainer: { batch_prompts: 16 } } },
        { name: 'base', data: { train: 'b.parquet' } },
        { name: 'own', data: { train: 'o.parquet' }, overrides: { trainer: { save_every: 7 } } },
      ],
    });
    const resolved = resolveSaveEvery(
      config,
      planStages(config, () => 64),
    );
    // format: 5 x 64 / 16 = 20; base: 5 x 64 / 32 = 10; own keeps its step cadence
    expect(resolved.stages?.map((s) => (s.overrides.trainer as { save_every: number }).save_every)).toEqual([
      20, 10, 7,
    ]);
  });

  it('save_every stays as given, 10 when neither is set, and both at once is an error', () => {
    const plain = RunConfigSchema.parse(base);
    expect(
      resolveSaveEvery(
        plain,
        planStages(plain, () => 8),
      ).trainer.save_every,
    ).toBe(10);
    const steps = RunConfigSchema.parse({ ...base, trainer: { save_every: 3 } });
    expect(
      resolveSaveEvery(
        steps,
        planStages(steps, () => 8),
      ).trainer.save_every,
    ).toBe(3);
    expect(() =>
      RunConfigSchema.parse({ ...base, trainer: { save_every: 3, save_every_epochs: 1 } }),
    ).toThrow(/give save_every \(learner steps\) or save_every_epochs, not both/);
  });
});
