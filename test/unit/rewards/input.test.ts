// Reward inputs: hand-written files, pipeline trajectories, and the episode logic feeding a reward directly.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  appendedTokens,
  episodeOutcome,
  onAssistantTurn,
  onToolResults,
  startEpisode,
} from '#shared/episode/index';
import { buildReward, normaliseRewardInput, rewardInputFromTrajectory } from '#shared/rewards/index';
import { TrajectorySchema } from '#shared/schemas/trajectory';
import { fixture, fixturePath, score } from './helpers.ts';

describe('normaliseRewardInput', () => {
  it('fills content, parse errors and calls from the text of a hand-written turn', () => {
    const input = normaliseRewardInput({
      groundTruth: '2',
      turns: [
        {
          text: 'Let me see <tool_call>{"name": "calculator", "arguments": {"expression": "1+1"}}</tool_call><tool_call>{}</tool_call>',
        },
      ],
    });
    expect(input.turns[0]).toEqual({
      text: expect.any(String),
      content: 'Let me see',
      calls: [{ name: 'calculator', arguments: { expression: '1+1' }, result: null }],
      parseErrors: [{ message: 'tool call has no "name"' }],
      stop: 'eos',
    });
    expect(input).toMatchObject({
      finishReason: 'eos',
      groundTruth: '2',
      tools: null,
      dataSource: null,
      extraInfo: {},
    });
  });

  it('accepts a scored pipeline trajectory plus ground_truth and ignores the token arrays', () => {
    const raw = JSON.parse(readFileSync(fixturePath('pipeline-trajectory.json'), 'utf8'));
    expect(TrajectorySchema.safeParse(raw).success).toBe(true);
    const input = normaliseRewardInput(raw);
    expect(input.groundTruth).toBe('391');
    expect(input.turns.map((t) => t.calls.length)).toEqual([1, 0]);
    expect(input.turns[0]?.calls[0]?.result?.output).toBe('391');
    expect(input.messages).toHaveLength(4);
    // The same episode as calc-correct.json, so the same scores.
    for (const name of ['format', 'toolcall', 'retool', 'exact_match']) {
      expect(score(name, input)).toEqual(score(name, fixture('calc-correct.json')));
    }
  });

  it("falls back to a trajectory-in-flight row's reward_model.ground_truth, data_source and extra_info", () => {
    const input = normaliseRewardInput({
      turns: [{ text: '4' }],
      row: {
        data_source: 'gsm8k',
        reward_model: { style: 'rule', ground_truth: '4' },
        extra_info: { index: 3 },
      },
    });
    expect(input).toMatchObject({ groundTruth: '4', dataSource: 'gsm8k', extraInfo: { index: 3 } });
  });

  it('takes tool names from OpenAI tool schemas', () => {
    const input = normaliseRewardInput({
      turns: [],
      tools: [{ type: 'function', function: { name: 'calculator', parameters: {} } }, 'search'],
    });
    expect(input.tools).toEqual(['calculator', 'search']);
  });

  it('names what is wrong with a bad file', () => {
    expect(() => normaliseRewardInput({ turns: [{ txt: 'x' }] })).toThrow(/turns.*0.*text/s);
    expect(() => normaliseRewardInput({ turns: [], finishReason: 'done' })).toThrow(/finishReason/);
    expect(() => normaliseRewardInput({ turns: [], ground_truth: '1', groundTruth: '2' })).toThrow(
      /both `ground_truth` and `groundTruth` with different values/,
    );
  });
});

describe('from the episode logic to a reward', () => {
  it('scores the turns the episode produced', async () => {
    let s = startEpisode({}, [{ role: 'user', content: 'What is 17 * 23?' }]);
    let t = onAssistantTurn(s, {
      text: '<tool_call>{"name": "calculator", "arguments": {"expression": "17*23"}}</tool_call>',
      stop: 'eos',
      generatedTokens: 20,
    });
    s = appendedTokens(
      onToolResults(t.state, [{ ok: true, output: '391', error: null, truncated: false }]).state,
      8,
    ).state;
    t = onAssistantTurn(s, { text: 'It is \\boxed{391}.', stop: 'eos', generatedTokens: 7 });
    const input = rewardInputFromTrajectory(episodeOutcome(t.state), {
      groundTruth: '391',
      tools: ['calculator'],
    });
    // toolcall: correctness 1, necessity 1, result_use 1, final_answer 1; coherence: eos, no parse error,
    // but turn 1 has no content and calls -> not empty: 3/3 -> 1
    const reward = await buildReward(
      { functions: [{ name: 'toolcall' }, { name: 'retool', weight: 0.5 }] },
      { baseDir: '.' },
    );
    const out = await reward(input);
    // 1 * 1 + 0.5 * 1 = 1.5
    expect(out.score).toBeCloseTo(1.5, 12);
    expect(out.components['toolcall/result_use']).toBe(1);
  });
});
