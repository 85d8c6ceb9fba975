// bench/peer-trl --trl-result: TRL's side of an earlier result, and the warm-start hash that guards it.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type PeerResult,
  renderMarkdown,
  reuseTrlSide,
  type SideResult,
} from '../../../bench/peer-trl/report.ts';
import { warmStartSha256 } from '../../../bench/peer-trl/toolrl-run.ts';

describe("TRL's side of an earlier result (--trl-result)", () => {
  const side: SideResult = {
    commandS: 4441,
    rlS: 4428,
    steps: 8,
    stepS: 262,
    sampled: 512,
    trained: 512,
    responseTokens: 49,
    validation: [{ step: 8, accuracy: 0.457, reward: 0.565, toolCalls: 1, atS: 4428 }],
    rewardFirst: 0.4,
    rewardLast: 0.51,
  };
  const base =
    'npx tsx bench/peer-trl/index.ts --max-steps 8 --seed 0 --config examples/smollm2/run.yaml --set trainer.eval_every=8 --trl-micro-batch 8';
  const prev: PeerResult = {
    command: `${base} --toolrl-run DIR`,
    date: '2026-11-29',
    cores: 2,
    cpu: 'cpu',
    load: 4,
    loadAfter: 4,
    steps: 8,
    toolrl: side,
    trl: side,
    versions: { trl: '1.16.0' },
    differences: [],
  };

  it('is taken when only toolrl changed: its mode, or where its side was read from', () => {
    const asyncCommand = `${base} --set trainer.deterministic=false --trl-result FILE`;
    expect(reuseTrlSide(prev, asyncCommand, 'a'.repeat(64))).toBe(side);
    // a result that recorded its warm start: the same one is taken
    expect(reuseTrlSide({ ...prev, warmStartSha256: 'a'.repeat(64) }, asyncCommand, 'a'.repeat(64))).toBe(
      side,
    );
  });

  it('is refused, naming why, for another seed, step count, config override or warm start', () => {
    expect(() => reuseTrlSide(prev, base.replace('--seed 0', '--seed 1'), 'a')).toThrow(
      /was run as `.*--seed 0.*`, which differs from this run/,
    );
    expect(() => reuseTrlSide(prev, base.replace('--max-steps 8', '--max-steps 16'), 'a')).toThrow(/differs/);
    expect(() => reuseTrlSide(prev, `${base} --set trainer.lr=1e-4`, 'a')).toThrow(/differs/);
    expect(() => reuseTrlSide(prev, base.replace(' --trl-micro-batch 8', ''), 'a')).toThrow(/differs/);
    expect(() => reuseTrlSide({ ...prev, warmStartSha256: 'b'.repeat(64) }, base, 'a'.repeat(64))).toThrow(
      /started from warm start bbbbbbbbbbbb, this run's is aaaaaaaaaaaa/,
    );
  });

  it('says in the table whose TRL run it is', () => {
    const md = renderMarkdown({
      ...prev,
      command: `${base} --set trainer.deterministic=false --trl-result FILE`,
      mode: 'asynchronous',
      trlFrom: { date: prev.date, command: prev.command },
    });
    expect(md).toContain(
      `TRL's side is the run of 2026-11-29 (\`${prev.command}\`), read from its result file`,
    );
    expect(renderMarkdown(prev)).not.toContain("TRL's side is the run of");
  });

  it('hashes the warm start by its weights: the adapter when there is one, else the model', () => {
    const dir = mkdtempSync(join(tmpdir(), 'peer-trl-sha-'));
    try {
      mkdirSync(join(dir, 'adapter'));
      mkdirSync(join(dir, 'model'));
      writeFileSync(join(dir, 'adapter', 'adapter_model.safetensors'), 'A');
      writeFileSync(join(dir, 'adapter', 'adapter_config.json'), '{}');
      writeFileSync(join(dir, 'model', 'model.safetensors'), 'M');
      const a = warmStartSha256({ model: join(dir, 'model'), adapter: join(dir, 'adapter') });
      const m = warmStartSha256({ model: join(dir, 'model') });
      expect(a).toMatch(/^[0-9a-f]{64}$/);
      expect(a).not.toBe(m);
      writeFileSync(join(dir, 'adapter', 'adapter_config.json'), '{"r": 8}'); // not weights: same hash
      expect(warmStartSha256({ model: join(dir, 'model'), adapter: join(dir, 'adapter') })).toBe(a);
      writeFileSync(join(dir, 'adapter', 'adapter_model.safetensors'), 'B');
      expect(warmStartSha256({ model: join(dir, 'model'), adapter: join(dir, 'adapter') })).not.toBe(a);
      rmSync(join(dir, 'model', 'model.safetensors'));
      expect(() => warmStartSha256({ model: join(dir, 'model') })).toThrow(/no \.safetensors weights/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
