import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONSTANTS_FILE, EXPORTED, renderConstants, renderJsonSchema } from '#shared/codegen/json-schemas';
import { PYTHON_MODULES, renderPython } from '#shared/codegen/python';
import { RunConfigSchema } from '#shared/schemas/config/run';
import { RolloutTrajectorySchema } from '#shared/schemas/trajectory';

describe('generated JSON Schemas', () => {
  it.each(Object.keys(EXPORTED))('%s.schema.json is up to date (run `npm run schemas:generate`)', (name) => {
    const committed = readFileSync(
      new URL(`../../../shared/schemas/json/${name}.schema.json`, import.meta.url),
      'utf8',
    );
    expect(committed).toBe(renderJsonSchema(name));
  });

  it('constants.json (key templates, queue attribute names, id formats) is up to date', () => {
    const committed = readFileSync(
      new URL(`../../../shared/schemas/json/${CONSTANTS_FILE}`, import.meta.url),
      'utf8',
    );
    expect(committed).toBe(renderConstants());
  });

  it.each(PYTHON_MODULES.map((m) => [m.path, m] as const))(
    "the learner's %s is what the zod schemas generate (run `npm run schemas:generate`)",
    (path, spec) => {
      const committed = readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
      expect(committed).toBe(renderPython(spec));
    },
  );
});

describe('trajectory', () => {
  const base = {
    sampleIndex: 0,
    tokenIds: [5, 6, 7],
    promptLength: 2,
    lossMask: [0, 0, 1],
    behaviorLogprobs: [0, 0, -0.5],
    policyVersions: [-1, -1, 0],
    finishReason: 'eos',
    turns: [],
    messages: [],
  };
  it('accepts token arrays of equal length', () => {
    expect(RolloutTrajectorySchema.safeParse(base).success).toBe(true);
  });
  it('names the array whose length disagrees with tokenIds', () => {
    const r = RolloutTrajectorySchema.safeParse({ ...base, lossMask: [0, 1] });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toMatch(/lossMask has 2 entries, tokenIds 3/);
  });
});

describe('run config', () => {
  it('fills defaults from a minimal config', () => {
    const cfg = RunConfigSchema.parse({ model: { path: 'tiny' }, data: { train: 'train.parquet' } });
    expect(cfg.rollout.multi_turn.tool_parser_format).toBe('hermes');
    expect(cfg.algorithm.adv_estimator).toBe('grpo');
  });
  it('rejects unknown keys by name', () => {
    const r = RunConfigSchema.safeParse({
      model: { path: 'tiny' },
      data: { train: 'a' },
      trainer: { lr_typo: 1 },
    });
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(/lr_typo/);
  });
});
