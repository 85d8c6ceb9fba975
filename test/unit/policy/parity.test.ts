// Parity with the learner: the engine's recorded log-probs equal the PyTorch model's (`toolrl_learner logprobs`)
// within 1e-3 in fp32, for `toolrl generate --json` samples and for a multi-turn trajectory with tool results.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadPolicy, type Policy } from '#shared/policy/policy';
import { DEFAULT_SAMPLING, type SamplingParams } from '#shared/policy/sampler';
import type { TokenState } from '#shared/policy/token-state';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';
import { LEARNER_PYTHON, REPO_ROOT, tinyBundle } from '../../../bench/support/tiny-model.ts';

const run = promisify(execFile);
const TOL = 1e-3;

let fx: { modelDir: string; bundleDir: string };
let policy: Policy;
let dir: string;
beforeAll(async () => {
  fx = await tinyBundle();
  policy = await loadPolicy(fx.bundleDir, { threads: 1 });
  dir = mkdtempSync(join(tmpdir(), 'toolrl-parity-'));
});
afterAll(async () => {
  await policy?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The learner's log-probs of `input` (generate output or trajectories) at temperature T. */
async function learnerLogprobs(
  input: unknown,
  temperature: number,
): Promise<{ logprobs: number[]; maxAbsDiff: number }[]> {
  const file = join(dir, `in-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(input));
  const { stdout } = await run(
    LEARNER_PYTHON,
    [
      '-m',
      'toolrl_learner',
      'logprobs',
      '--model',
      fx.modelDir,
      '--input',
      file,
      '--temperature',
      String(temperature),
      '--json',
    ],
    { cwd: REPO_ROOT, maxBuffer: 64 << 20 },
  );
  return JSON.parse(stdout).samples;
}

const maxDiff = (a: readonly number[], b: readonly number[]) => {
  expect(a.length).toBe(b.length);
  return Math.max(0, ...a.map((x, i) => Math.abs(x - b[i]!)));
};

describe('log-prob parity with the learner (fp32)', () => {
  it('`toolrl generate --json` samples at T = 0.8', async () => {
    const { stdout } = await run(
      join(REPO_ROOT, 'bin', 'toolrl.mjs'),
      [
        'generate',
        '--policy',
        fx.bundleDir,
        '--prompt',
        'What is 17 * 23?',
        '--n',
        '4',
        '--max-new-tokens',
        '24',
        '--temperature',
        '0.8',
        '--seed',
        '7',
        '--threads',
        '1',
        '--json',
      ],
      { cwd: REPO_ROOT, maxBuffer: 64 << 20 },
    );
    const gen = JSON.parse(stdout) as {
      prompt_token_ids: number[];
      samples: { text: string; token_ids: number[]; logprobs: number[]; finish_reason: string }[];
    };
    expect(Object.keys(gen).sort()).toEqual(['prompt_token_ids', 'samples']);
    expect(gen.samples).toHaveLength(4);
    for (const s of gen.samples) {
      expect(Object.keys(s).sort()).toEqual(['finish_reason', 'logprobs', 'text', 'token_ids']);
      expect(['eos', 'tool_call', 'length']).toContain(s.finish_reason);
    }
    const learner = await learnerLogprobs(gen, 0.8);
    gen.samples.forEach((s, i) => {
      expect(maxDiff(s.logprobs, learner[i]!.logprobs)).toBeLessThan(TOL);
    });
  });

  it('a multi-turn trajectory with tool results, at T = 1', async () => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'What is 17 * 23, then plus 9?' }];
    const tools: ToolSchema[] = [
      {
        type: 'function',
        function: { name: 'calculator', description: 'arithmetic', parameters: { type: 'object' } },
      },
    ];
    const s: SamplingParams = { ...DEFAULT_SAMPLING, maxNewTokens: 16, seed: 13 };
    const { states } = await policy.startGroup(messages, tools, 2, s);
    const done: TokenState[] = [];
    for (const first of states) {
      const second = await policy.continueTrajectory(first, [{ role: 'tool', content: '391' }], s);
      const third = await policy.continueTrajectory(second.state, [{ role: 'tool', content: '400' }], s);
      done.push(third.state);
    }
    for (const t of done) {
      expect(t.turns).toHaveLength(3);
      expect(t.lossMask.slice(t.promptLength).includes(0)).toBe(true); // tool results inside
    }
    const learner = await learnerLogprobs({ trajectories: done }, 1);
    done.forEach((t, i) => {
      const ours = t.behaviorLogprobs.filter((_, j) => t.lossMask[j] === 1);
      const theirs = learner[i]!.logprobs.filter((_, j) => t.lossMask[j] === 1);
      expect(ours.length).toBe(t.turns.reduce((n, u) => n + u.tokenEnd - u.tokenStart, 0));
      expect(maxDiff(ours, theirs)).toBeLessThan(TOL);
      expect(learner[i]!.maxAbsDiff).toBeLessThan(TOL);
    });
  });
});
