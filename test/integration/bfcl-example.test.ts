// examples/bfcl on the embedded default: `toolrl train` walks the three curriculum stages (format -> base -> full)
// with the bfcl tools and rewards and the tiny model. The test runs the shipped config with only its sizes cut
// (one row per stage, two samples, short turns) so that three learner steps, one per stage, finish in minutes.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { ensureBfclEnv } from '#shared/bfcl/env';
import { parseRunConfig } from '#shared/config/resolve';
import { readDataset, writeDataset } from '#shared/data/dataset';
import { ScoredGroupSchema } from '#shared/schemas/scored-group';
import { HANG_MS } from '../helpers/hang.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EXAMPLE = join(ROOT, 'examples', 'bfcl');
const dir = mkdtempSync(join(tmpdir(), 'bfcl-example-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('examples/bfcl', () => {
  it('is a valid run config with the seed’s hyperparameters and three stages', () => {
    const config = parseRunConfig(readFileSync(join(EXAMPLE, 'run.yaml'), 'utf8'), 'run.yaml');
    // The seed's batch sizes (16 in the format stage, 32 after) and a checkpoint every 5 epochs.
    expect(config.trainer).toMatchObject({
      lr: 1e-6,
      grad_clip: 1.0,
      save_every_epochs: 5,
      batch_prompts: 32,
    });
    expect(
      config.stages?.map(
        (s) => (s.overrides.trainer as { batch_prompts?: number } | undefined)?.batch_prompts,
      ),
    ).toEqual([16, undefined, undefined]);
    expect(config.algorithm).toMatchObject({ use_kl_loss: true, kl_loss_coef: 0.1, entropy_coeff: 0.001 });
    expect(config.stages?.map((s) => s.name)).toEqual(['format', 'base', 'full']);
    expect(config.tools.tools?.map((t) => t.kind)).toEqual(['bfcl']);
    expect(config.reward.functions.map((f) => f.name)).toEqual(['bfcl', 'format']);
  });

  it('ships one stage file of 8 rows per stage', async () => {
    for (const name of ['format', 'base', 'full']) {
      const rows = await readDataset(join(EXAMPLE, 'data', `${name}.parquet`));
      expect(rows, name).toHaveLength(8);
    }
    const full = await readDataset(join(EXAMPLE, 'data', 'full.parquet'));
    expect(new Set(full.map((r) => r.data_source))).toEqual(
      new Set([
        'bfcl_multi_turn_base',
        'bfcl_multi_turn_miss_func',
        'bfcl_multi_turn_miss_param',
        'bfcl_multi_turn_long_context',
      ]),
    );
  });

  it('trains through format, base and full on the embedded default', async () => {
    await ensureBfclEnv();
    const config = parse(readFileSync(join(EXAMPLE, 'run.yaml'), 'utf8'));
    for (const name of ['format', 'base', 'full']) {
      // The row with the shortest prompt (fewest tool schemas) keeps the tiny model's sequences short.
      const rows = await readDataset(join(EXAMPLE, 'data', `${name}.parquet`));
      const size = (r: (typeof rows)[number]) => JSON.stringify(r.extra_info.tools).length;
      writeDataset(join(dir, `${name}.parquet`), [[...rows].sort((a, b) => size(a) - size(b))[0]!]);
    }
    config.data.train = 'full.parquet';
    delete config.data.val;
    config.rollout.n = 2;
    config.rollout.max_new_tokens = 16;
    Object.assign(config.rollout.multi_turn, { max_turns: 4, max_total_response_length: 128 });
    Object.assign(config.trainer, { batch_prompts: 1, eval_every: 0 });
    for (const s of config.stages) {
      Object.assign(s, { epochs: 1, data: { train: `${s.name}.parquet` } });
      if (s.overrides?.trainer) s.overrides.trainer.batch_prompts = 1;
    }
    writeFileSync(join(dir, 'run.yaml'), stringify(config));

    const run = spawnSync(
      process.execPath,
      [
        join(ROOT, 'bin', 'toolrl.mjs'),
        'train',
        join(dir, 'run.yaml'),
        '--workdir',
        join(dir, 'work'),
        '--max-steps',
        '3',
        '--json',
      ],
      { cwd: ROOT, encoding: 'utf8', timeout: HANG_MS, maxBuffer: 64 << 20 },
    );
    expect(run.status, run.stderr.slice(-3000)).toBe(0);
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({ status: 'completed', learner: { step: 3, groupsConsumed: 3 } });

    const groupsDir = join(result.runDir, 'groups');
    const groups = readdirSync(groupsDir)
      .sort()
      .map((f) => ScoredGroupSchema.parse(JSON.parse(readFileSync(join(groupsDir, f), 'utf8'))));
    expect(groups.map((g) => g.stage)).toEqual(['format', 'base', 'full']);
    for (const g of groups) {
      for (const t of g.trajectories) {
        // Every trajectory was scored by BFCL's checker and the format reward; the format stage counts format.
        expect(Object.keys(t.rewardComponents)).toEqual(
          expect.arrayContaining(['bfcl/progress', 'bfcl/success', 'format/well_formed']),
        );
        const expected = t.rewardComponents.bfcl! + (g.stage === 'format' ? t.rewardComponents.format! : 0);
        expect(t.reward).toBeCloseTo(expected, 9);
      }
    }
  });
});
