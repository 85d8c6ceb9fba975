// The real-model path, so it cannot rot: examples/smollm2/run.yaml through the real CLI on the real SmolLM2-135M-
// Instruct weights (converted by `npm run setup`, or here on first use), at a reduced size: a 2-step warm start,
// 2 GRPO steps of 2 questions x 2 samples, and validation of 2 held-out questions at the start and the end (about 5
// minutes on 2 loaded cores). It
// asserts what the pipeline does (the learner loads the converted model, the smollm2 template's prompts reach the
// ONNX rollouts, tool calls run, every output is written), never what so short a run learns.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeDataset } from '#shared/data/dataset';
import { readDatasetFile } from '#shared/data/dataset-file';
import { ChatTokenizer } from '#shared/policy/tokenizer';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';
import { HANG_MS } from '../helpers/hang.ts';

const work = mkdtempSync(join(tmpdir(), 'toolrl-smollm2-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('examples/smollm2/run.yaml on the real model, at a reduced size', () => {
  it('warm-starts, trains 2 steps with calculator calls, validates and writes its bundles', async () => {
    const data = join(REPO_ROOT, 'examples', 'smollm2', 'data');
    const train = join(work, 'train.parquet');
    const val = join(work, 'val.parquet');
    writeDataset(train, (await readDatasetFile(join(data, 'train.parquet'))).slice(0, 4));
    writeDataset(val, (await readDatasetFile(join(data, 'val.parquet'))).slice(0, 2));
    const run = spawnSync(
      process.execPath,
      [
        join(REPO_ROOT, 'bin', 'toolrl.mjs'),
        'train',
        'examples/smollm2/run.yaml',
        '--max-steps',
        '2',
        '--workdir',
        work,
        '--json',
        `data.train=${train}`,
        `data.val=${val}`,
        'trainer.batch_prompts=2',
        'rollout.n=2',
        'rollout.val_kwargs.n=1',
        'trainer.sft.steps=2',
        'trainer.sft.batch_size=2',
        // Every batch trains, whatever two samples of a question happen to score (not what this test is about).
        'algorithm.filter_groups=false',
      ],
      { cwd: REPO_ROOT, encoding: 'utf8', timeout: HANG_MS, maxBuffer: 64 << 20 },
    );
    expect(run.status, run.stderr.slice(-4000)).toBe(0);
    const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({ status: 'completed', learner: { step: 2, done: true } });
    const dir: string = result.runDir;
    // The warm start ran its 2 steps (the learner's log; the progress line shows it only if a tick falls in it).
    const log = readFileSync(join(dir, 'learner.log'), 'utf8');
    expect(log).toMatch(/SFT warm start: 2 steps on/);
    expect(log.match(/\bsft \{/g)?.length, log.slice(-2000)).toBe(2);
    // The rollouts ran SmolLM2 with the smollm2 template: its system prompt, Hermes calls, the tool's results.
    const manifest = JSON.parse(readFileSync(join(dir, 'policy', 'v0', 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({ eosTokenIds: [2] });
    const groups = readdirSync(join(dir, 'groups')).filter((g) => g.startsWith('e0-'));
    expect(groups.length).toBe(4);
    const group = JSON.parse(readFileSync(join(dir, 'groups', groups[0]!), 'utf8'));
    const traj = group.trajectories[0];
    expect(traj.tokenIds.length).toBe(traj.lossMask.length);
    const tok = await ChatTokenizer.load(join(dir, 'policy', 'v0'));
    const prompt = tok.decode(traj.tokenIds.slice(0, traj.promptLength));
    expect(prompt).toMatch(
      /^<\|im_start\|>system\nYou are a helpful AI assistant named SmolLM[\s\S]*<tools>/,
    );
    expect(prompt.endsWith('<|im_start|>assistant\n')).toBe(true);
    for (const v of [0, 1, 2])
      expect(existsSync(join(dir, 'policy', `v${v}`, 'manifest.json')), `v${v}`).toBe(true);
    expect(readdirSync(join(dir, 'metrics', 'eval')).sort()).toEqual(['v0.json', 'v2.json']);
    const last = JSON.parse(readFileSync(join(dir, 'metrics', 'eval', 'v2.json'), 'utf8'));
    expect(last).toMatchObject({ prompts: 2, trajectories: 2 });
    expect(readdirSync(join(dir, 'checkpoints')).length).toBeGreaterThan(0);
    // The rollouts' KV cache: every trajectory that ended freed the cache its last turn kept, so none is left holding
    // memory at the end of the run (this run samples no group past its last step: every group trains, and the feeder
    // issues no more than the steps take; a run that drops groups can end with a few trajectories still in flight).
    const cacheLine = readFileSync(join(dir, 'pipeline.log'), 'utf8')
      .split('\n')
      .find((l) => l.includes('"rollout KV cache"'));
    expect(cacheLine).toBeDefined();
    const cache = JSON.parse(cacheLine!);
    expect(cache.freed, cacheLine).toBeGreaterThan(0);
    expect(cache.held, cacheLine).toBe(0);
  });
});
