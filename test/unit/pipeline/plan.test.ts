// The run's walk over stages, epochs and prompts (what the feeder issues, position by position).
import { describe, expect, it } from 'vitest';
import { groupAt, groupSeed, groupsPlanned, planStages } from '#shared/pipeline/plan';
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
