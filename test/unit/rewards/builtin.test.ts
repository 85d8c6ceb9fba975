// Every built-in reward on hand-made trajectories (test/fixtures/rewards), with the arithmetic in comments.
//   calc-correct:  turn 1 calls calculator(17*23) -> "391" (ok); turn 2 "17 * 23 = \boxed{391}"; gt "391";
//                  tools [calculator, search]; finish eos.
//   calc-messy:    turn 1: calculator(17*23) ok "391" twice + one call without a name (parse error);
//                  turn 2: python(...) refused as unknown_tool; turn 3: "The answer is 391.0"; gt "391";
//                  tools [calculator]. Calls C = 3, parse errors 1, attempts A = 4.
import { describe, expect, it } from 'vitest';
import { rewardConfig } from '#shared/config/resolve';
import { normaliseRewardInput } from '#shared/rewards/index';
import { fixture, score } from './helpers.ts';

describe('format', () => {
  it('a clean episode scores 1', () => {
    // well_formed 1/1 = 1, final_answer 1 -> (1 + 1) / 2 = 1
    expect(score('format', fixture('calc-correct.json'))).toEqual({
      score: 1,
      components: { well_formed: 1, final_answer: 1 },
    });
  });
  it('counts malformed calls', () => {
    // well_formed = 3 valid / 4 attempts = 0.75; final_answer 1 -> 0.875
    expect(score('format', fixture('calc-messy.json'))).toEqual({
      score: 0.875,
      components: { well_formed: 0.75, final_answer: 1 },
    });
  });
  it('asks for the configured answer form', () => {
    // calc-messy's answer is not boxed: final_answer 0 -> (0.75 + 0) / 2
    expect(score('format', fixture('calc-messy.json'), { answer: 'boxed' }).score).toBe(0.375);
    expect(score('format', fixture('calc-correct.json'), { answer: 'boxed' }).score).toBe(1);
  });
  it('no final answer when the episode hit a limit or ended on a call', () => {
    // well_formed 1 (one valid call), final_answer 0 -> 0.5
    expect(score('format', fixture('calc-correct.json', { finish_reason: 'max_turns' })).score).toBe(0.5);
    const endedOnCall = fixture('calc-correct.json');
    endedOnCall.turns.pop();
    expect(score('format', endedOnCall).components.final_answer).toBe(0);
  });
  it('an episode with no turns scores 0', () => {
    expect(score('format', fixture('calc-correct.json', { turns: [] })).score).toBe(0);
  });
  it('no credit for answering without a call where a call is expected (EnvTuning: score * is_tool_call)', () => {
    // turn 2 alone: an answer, no call attempted; a call is expected by default -> 0
    const answerOnly = fixture('calc-correct.json');
    answerOnly.turns.shift();
    expect(score('format', answerOnly)).toEqual({
      score: 0,
      components: { well_formed: 0, final_answer: 1 },
    });
    // the row says no tool is needed: nothing to be malformed, an answer -> (1 + 1) / 2
    const noToolNeeded = fixture('calc-correct.json', { ground_truth: { answer: '391', need_tool: false } });
    noToolNeeded.turns.shift();
    expect(score('format', noToolNeeded).score).toBe(1);
    // or the config says so for rows that do not
    expect(score('format', answerOnly, { need_tool: false }).score).toBe(1);
    // a row naming its tools expects a call even with need_tool: false in the config
    const toolsListed = fixture('calc-correct.json', {
      ground_truth: { answer: '391', tools: ['calculator'] },
    });
    toolsListed.turns.shift();
    expect(score('format', toolsListed, { need_tool: false }).score).toBe(0);
  });
});

describe('toolcall', () => {
  it('a clean, grounded, correct episode scores 1', () => {
    // correctness 1/1, necessity 1 (1 distinct / 1), result_use 1 ("391" is in the output),
    // final_answer 1 (boxed 391 = 391), coherence 3/3 -> 0.3 + 0.2 + 0.2 + 0.2 + 0.1 = 1
    const r = score('toolcall', fixture('calc-correct.json'));
    expect(r.components).toEqual({
      correctness: 1,
      necessity: 1,
      result_use: 1,
      final_answer: 1,
      coherence: 1,
    });
    // Exactly 1, not 0.9999999999999999 (the float sum of the weights): the sum is rounded to 1e-9.
    expect(r.score).toBe(1);
    expect(JSON.stringify(r.score)).toBe('1');
  });

  it('the messy episode', () => {
    // The ground truth "391" is reached by the calculator's result, so those calls serve the task; the python call
    // was refused (unknown_tool) and serves nothing.
    // correctness: 2 serving calls / A=4 attempts (3 calls + 1 parse error) = 0.5
    // necessity:   1 distinct serving call (the calculator call is repeated) / C=3 = 1/3
    // result_use:  the answer "391.0" equals the number 391 in a serving call's output: 1
    // final_answer: "391.0" = "391" as rationals: 1
    // coherence:   eos yes, no empty turn yes, no parse error no: 2/3
    // score = 0.3*0.5 + 0.2/3 + 0.2*1 + 0.2*1 + 0.1*2/3 = 0.15 + 0.0666… + 0.4 + 0.0666… = 0.683333333 (1e-9)
    const r = score('toolcall', fixture('calc-messy.json'));
    expect(r.components).toEqual({
      correctness: 0.5,
      necessity: 1 / 3,
      result_use: 1,
      final_answer: 1,
      coherence: 2 / 3,
    });
    expect(r.score).toBe(0.683333333);
  });

  it('not calling a tool when none is needed', () => {
    // gt says no tool is needed and the model answered directly: correctness 1 (no attempt, none needed),
    // necessity 1, result_use 1 (nothing to use), final_answer 1 ("Paris"), coherence 1 -> 1
    const input = fixture('calc-correct.json', {
      ground_truth: { answer: 'Paris', need_tool: false },
      turns: [{ text: 'The capital of France is Paris.\nFinal answer: Paris' }],
    });
    expect(score('toolcall', input).score).toBe(1);
    // The same answer when a tool was needed: correctness 0, necessity 0, result_use 0, final 1, coherence 1
    // -> 0.2 + 0.1 = 0.3
    expect(score('toolcall', { ...input, groundTruth: 'Paris' }).score).toBe(0.3);
  });

  it('calling a tool when none is needed loses necessity only', () => {
    // correctness 1, necessity 0, result_use 1, final_answer 1, coherence 1 -> 0.8
    const r = score(
      'toolcall',
      fixture('calc-correct.json', { ground_truth: { answer: '391', need_tool: false } }),
    );
    expect(r.components.necessity).toBe(0);
    expect(r.score).toBe(0.8);
  });

  it('the ground truth can name the expected tools and the weights are configurable', () => {
    // Expected tool "search" only: the calculator call is not correct -> correctness 0/1 = 0.
    // weights {correctness: 1, others 0} -> score 0
    const input = fixture('calc-correct.json', { ground_truth: { answer: '391', tools: ['search'] } });
    const weights = { correctness: 1, necessity: 0, result_use: 0, final_answer: 0, coherence: 0 };
    expect(score('toolcall', input, { weights }).score).toBe(0);
    expect(score('toolcall', fixture('calc-correct.json'), { weights }).score).toBe(1);
  });

  it('a wrong answer not found in any output', () => {
    // result_use 0 (neither "392" nor the number 392 is in "391"), final_answer 0 -> 1 - 0.2 - 0.2 = 0.6
    const input = fixture('calc-correct.json');
    input.turns[1]!.content = '17 * 23 = \\boxed{392}';
    expect(score('toolcall', input).score).toBe(0.6);
  });

  it('without a ground-truth answer, final_answer rewards ending with an answer', () => {
    expect(
      score('toolcall', fixture('calc-correct.json', { ground_truth: null })).components.final_answer,
    ).toBe(1);
    expect(
      score('toolcall', fixture('calc-correct.json', { ground_truth: null, finish_reason: 'max_turns' }))
        .components.final_answer,
    ).toBe(0);
  });
});

describe('toolcall: a call earns credit only when it serves the task', () => {
  // "What is 360 - 219?" (gold 141), the hollow call the quick start once learned: calculator("110 + 124").
  const episode = (calls: { expression: string; output: string }[], answer: string, gt: unknown = '141') =>
    normaliseRewardInput({
      ground_truth: gt,
      tools: ['calculator'],
      turns: [
        ...calls.map((c) => ({
          text: `<tool_call>{"name": "calculator", "arguments": {"expression": "${c.expression}"}}</tool_call>`,
          toolCalls: [
            {
              name: 'calculator',
              arguments: { expression: c.expression },
              result: { ok: true, output: c.output },
            },
          ],
        })),
        { text: `The answer is \\boxed{${answer}}.` },
      ],
    });

  it('the right call scores 1; the well-formed call with the wrong operands scores like no call at all', () => {
    const right = score('toolcall', episode([{ expression: '360 - 219', output: '141' }], '141'));
    expect(right.score).toBe(1);
    // hollow: 234 does not reach 141 and feeds nothing: correctness 0, necessity 0, result_use 0 (234 comes from
    // a call that serves nothing), final_answer 0, coherence 1 -> 0.1
    const hollow = score('toolcall', episode([{ expression: '110 + 124', output: '234' }], '234'));
    expect(hollow.components).toEqual({
      correctness: 0,
      necessity: 0,
      result_use: 0,
      final_answer: 0,
      coherence: 1,
    });
    expect(hollow.score).toBe(0.1);
    // answering from memory (no call, wrong): correctness 0, necessity 0, result_use 0, final 0, coherence 1
    const guess = score(
      'toolcall',
      normaliseRewardInput({ ground_truth: '141', turns: [{ text: '\\boxed{151}' }] }),
    );
    expect(guess.score).toBe(0.1);
  });

  it('a plain-number answer is not reached by a result that only contains its digits', () => {
    // 1141 is not 141: correctness 0 (the call serves nothing), result_use 0, final_answer 0 -> coherence 0.1
    expect(score('toolcall', episode([{ expression: '1000 + 141', output: '1141' }], '1141')).score).toBe(
      0.1,
    );
  });

  it('a first call whose result feeds the call that reaches the answer serves too (chained calls)', () => {
    // 12 * 10 = 120 feeds 120 + 21 = 141: both serve: correctness 2/2, necessity 2/2, result_use 1 -> 1
    const chain = episode(
      [
        { expression: '12 * 10', output: '120' },
        { expression: '120 + 21', output: '141' },
      ],
      '141',
    );
    expect(score('toolcall', chain).score).toBe(1);
    // A detour that feeds nothing: correctness 1/2 (0.15), necessity 1/2 (0.1), result_use 1 (0.2), final 1 (0.2),
    // coherence 1 (0.1) -> 0.75
    const detour = episode(
      [
        { expression: '7 * 7', output: '49' },
        { expression: '360 - 219', output: '141' },
      ],
      '141',
    );
    expect(score('toolcall', detour).score).toBe(0.75);
  });

  it('expected calls in the ground truth are matched by name and arguments', () => {
    // gt calls: calculator("360 - 219"); whitespace in strings is normalised, so "360  -  219" matches.
    const gt = { answer: '141', calls: [{ name: 'calculator', arguments: { expression: '360 - 219' } }] };
    expect(score('toolcall', episode([{ expression: '360  -  219', output: '141' }], '141', gt)).score).toBe(
      1,
    );
    // "-219 + 360" reaches 141, but it is not the call the ground truth expects: correctness 0, necessity 0,
    // result_use 0; final_answer 1 -> 0.2 + 0.1 = 0.3
    expect(score('toolcall', episode([{ expression: '-219 + 360', output: '141' }], '141', gt)).score).toBe(
      0.3,
    );
  });

  it('check_calls: none pays any allowed, successful call (format only)', () => {
    // correctness 1, necessity 1, result_use 1 (234 is in the call's output), final 0, coherence 1 -> 0.8
    const hollow = episode([{ expression: '110 + 124', output: '234' }], '234');
    expect(score('toolcall', hollow, { check_calls: 'none' }).score).toBe(0.8);
  });
});

describe('toolcall: answers in Chinese and as `expr = value`', () => {
  // calc-chinese: calculator(25 * 37) -> "925"; then "计算器返回了 925，所以答案是 925。"; gt "925".
  // calc-equation: the same call; then "The calculator agrees.\n25 * 37 = 925".
  it.each(['calc-chinese.json', 'calc-equation.json'])(
    '%s earns every part, final answer included',
    (name) => {
      // correctness 1, necessity 1, result_use 1 (925 is in the output), final_answer 1 (925 = 925), coherence 1
      const r = score('toolcall', fixture(name));
      expect(r.components).toEqual({
        correctness: 1,
        necessity: 1,
        result_use: 1,
        final_answer: 1,
        coherence: 1,
      });
      expect(r.score).toBe(1);
    },
  );

  it('a wrong Chinese answer still loses the final-answer part', () => {
    const wrong = fixture('calc-chinese.json');
    wrong.turns[1]!.content = '所以答案是 952。';
    // final_answer 0 and result_use 0 (952 is in no output): 1 - 0.2 - 0.2
    const r = score('toolcall', wrong);
    expect(r.components.final_answer).toBe(0);
    expect(r.score).toBeCloseTo(0.6, 9);
  });
});

describe('retool', () => {
  it('+1 for the boxed correct answer', () => {
    expect(score('retool', fixture('calc-correct.json'))).toEqual({
      score: 1,
      components: { correct: 1, answer_found: 1, malformed_calls: 0, penalty: 0 },
    });
  });
  it('-1 without a boxed answer, minus 0.1 per malformed call', () => {
    // malformed = 1 parse error + 1 unknown_tool = 2 -> penalty min(0.5, 0.1*2) = 0.2; no \boxed -> -1 - 0.2
    const r = score('retool', fixture('calc-messy.json'));
    expect(r.components).toEqual({ correct: 0, answer_found: 0, malformed_calls: 2, penalty: 0.2 });
    expect(r.score).toBeCloseTo(-1.2, 12);
    // Reading "The answer is 391.0" instead: correct -> 1 - 0.2 = 0.8
    expect(score('retool', fixture('calc-messy.json'), { answer: 'auto' }).score).toBeCloseTo(0.8, 12);
  });
  it('caps the penalty and takes fraction answers', () => {
    // 9 parse errors * 0.1 = 0.9, capped at 0.5; \dfrac{782}{2} = 391 -> 1 - 0.5 = 0.5
    const input = fixture('calc-correct.json', {
      turns: [{ text: '<tool_call>{}</tool_call>'.repeat(9) }, { text: 'so \\boxed{\\dfrac{782}{2}}' }],
    });
    expect(score('retool', input)).toEqual({
      score: 0.5,
      components: { correct: 1, answer_found: 1, malformed_calls: 9, penalty: 0.5 },
    });
  });
  it('rewards and penalties are configurable', () => {
    // wrong (392): wrong_reward 0, no malformed call -> 0
    const input = fixture('calc-correct.json', { turns: [{ text: '\\boxed{392}' }] });
    expect(score('retool', input, { wrong_reward: 0 }).score).toBe(0);
  });
  it('a row without a ground truth is an error, not a silent zero', () => {
    expect(() => score('retool', fixture('calc-correct.json', { ground_truth: null }))).toThrow(
      /needs a ground truth/,
    );
  });
});

describe('toolbench', () => {
  it('an API call and a Finish with an answer: the maximum, 1.1', () => {
    // format 2/2 = 1, function_call 1/1, finish 1, error_rate 0, finish_bonus 1 (no ground truth)
    // -> 0.1 + 0.2 + 0.3 - 0.5*0 + 0.5 = 1.1
    const r = score('toolbench', fixture('toolbench-finish.json'));
    expect(r.components).toEqual({
      format: 1,
      function_call: 1,
      finish: 1,
      error_rate: 0,
      finish_bonus: 1,
      not_cached: 0,
    });
    expect(r.score).toBe(1.1); // not 0.6000000000000001 + 0.5
  });
  it('the bonus needs the golden answer in the final answer', () => {
    // "19" is not in "it is 18°c in paris": bonus 0 -> 0.6; "18" is -> 1.1
    expect(score('toolbench', fixture('toolbench-finish.json', { ground_truth: '19' })).score).toBe(0.6);
    expect(score('toolbench', fixture('toolbench-finish.json', { ground_truth: '18' })).score).toBe(1.1);
  });
  it('errors, give-up and custom weights', () => {
    // api ok, api http_error, a malformed call, Finish give_up_and_restart: attempts 4, calls 3
    // format 3/4, function_call 1/2 (2 API calls, 1 ok), finish 0, error_rate (1 + 1)/4 = 0.5, bonus 0
    // -> 0.1*0.75 + 0.2*0.5 + 0 - 0.5*0.5 + 0 = 0.075 + 0.1 - 0.25 = -0.075
    const fail = { ok: false, error: { type: 'http_error', message: '503' } };
    const input = fixture('toolbench-finish.json', {
      turns: [
        {
          text: 'a',
          toolCalls: [
            {
              name: 'get_weather_for_city',
              arguments: { city: 'Paris' },
              result: { ok: true, output: '18' },
            },
          ],
        },
        {
          text: 'b',
          toolCalls: [{ name: 'get_weather_for_city', arguments: { city: 'Rome' }, result: fail }],
        },
        { text: '<tool_call>{"name": "Finish", "arguments": [</tool_call>' },
        {
          text: 'c',
          toolCalls: [
            { name: 'Finish', arguments: { return_type: 'give_up_and_restart' }, result: { ok: true } },
          ],
        },
      ],
    });
    const r = score('toolbench', input);
    expect(r.components).toEqual({
      format: 0.75,
      function_call: 0.5,
      finish: 0,
      error_rate: 0.5,
      finish_bonus: 0,
      not_cached: 0,
    });
    expect(r.score).toBe(-0.075);
    // weights {format: 1, error_penalty: -1, others 0}: 0.75 - 0.5 = 0.25
    const weights = { format: 1, function_call: 0, finish: 0, error_penalty: -1, finish_bonus: 0 };
    expect(score('toolbench', input, weights).score).toBe(0.25);
  });
  it('no call at all scores 0', () => {
    expect(
      score('toolbench', fixture('toolbench-finish.json', { turns: [{ text: 'It is warm.' }] })).score,
    ).toBe(0);
  });
  it("a call the cache cannot answer is the environment's gap: in neither function_call nor error_rate", () => {
    // api ok, api not_cached, Finish with an answer: attempts 3; judged 2 (the uncached call left out)
    // format 3/3, function_call 1/1, finish 1, error_rate 0/2, bonus 1, not_cached 1/2 -> 1.1
    const notCached = {
      ok: false,
      error: { type: 'not_cached', message: 'not cached: no response is cached for …' },
    };
    const input = fixture('toolbench-finish.json', {
      turns: [
        {
          text: 'a',
          toolCalls: [
            {
              name: 'get_weather_for_city',
              arguments: { city: 'Paris' },
              result: { ok: true, output: '18' },
            },
            { name: 'get_weather_for_city', arguments: { city: 'Oslo' }, result: notCached },
          ],
        },
        {
          text: 'b',
          toolCalls: [
            {
              name: 'Finish',
              arguments: { return_type: 'give_answer', final_answer: '18' },
              result: { ok: true },
            },
          ],
        },
      ],
    });
    const r = score('toolbench', input);
    expect(r.components).toMatchObject({ function_call: 1, error_rate: 0, not_cached: 0.5, finish: 1 });
    expect(r.score).toBe(1.1);
  });
  it("takes the ToolBench seed's weight names", () => {
    const input = fixture('toolbench-finish.json');
    // only the format part weighs: 1 * format 1
    const seedWeights = {
      format_reward_weight: 1,
      function_call_reward_weight: 0,
      finish_reward_weight: 0,
      error_penalty: 0,
      finish_bonus: 0,
    };
    // translated where the config is read (the resolver), as a run's reward.functions are
    expect(
      score('toolbench', input, rewardConfig('toolbench', seedWeights) as Record<string, unknown>).score,
    ).toBe(1);
  });
});

describe('exact_match', () => {
  it('matches after normalisation against any golden answer', () => {
    // "The Paris." -> "paris" = normalised "Paris"
    expect(score('exact_match', fixture('search-answer.json'))).toEqual({
      score: 1,
      components: { exact_match: 1, answer_found: 1 },
    });
  });
  it('a longer answer matches only in substring mode; format_score gives partial credit', () => {
    const input = fixture('search-answer.json', { turns: [{ text: '<answer>It is Paris</answer>' }] });
    expect(score('exact_match', input).score).toBe(0);
    expect(score('exact_match', input, { substring: true }).score).toBe(1);
    expect(score('exact_match', input, { format_score: 0.1 }).score).toBe(0.1);
  });
  it('compares text, not numbers: "391.0" is not "391"', () => {
    // Punctuation is dropped: "391.0" -> "3910".
    expect(score('exact_match', fixture('calc-messy.json')).components).toEqual({
      exact_match: 0,
      answer_found: 1,
    });
  });
  it('no answer in the required form scores 0', () => {
    expect(score('exact_match', fixture('search-answer.json'), { answer: 'boxed' })).toEqual({
      score: 0,
      components: { exact_match: 0, answer_found: 0 },
    });
  });
});

describe('reasoning blocks', () => {
  it('the answer is read after </think>, and thinking alone is no answer', () => {
    const answered = fixture('calc-correct.json', {
      turns: [{ text: '<think>maybe \\boxed{390}? no: 17*23 = 391</think>\nSo \\boxed{391}' }],
    });
    expect(score('retool', answered).components.correct).toBe(1);
    const thinkingOnly = fixture('calc-correct.json', {
      turns: [{ text: '<think>17*23 = \\boxed{391}</think>' }],
    });
    expect(score('retool', thinkingOnly).components.answer_found).toBe(0);
    // no call needed: well_formed 1 (nothing attempted), final_answer 0 -> 0.5
    expect(score('format', thinkingOnly, { need_tool: false }).score).toBe(0.5);
  });
});

describe('determinism', () => {
  it('the same input scores the same every time', () => {
    const input = fixture('calc-messy.json');
    for (const name of ['format', 'toolcall', 'retool', 'toolbench', 'exact_match']) {
      expect(score(name, input)).toEqual(score(name, structuredClone(input)));
    }
  });
});
