// The ReAct format of ToolBench / ToolLLaMA and the ToolBench seed: Thought / Action / Action Input.
import { describe, expect, it } from 'vitest';
import { getParser, parseToolCalls } from '#shared/parsing/index';

const react = (text: string) => parseToolCalls(text, 'react');

describe('react parser', () => {
  it('reads a ToolLLaMA step: the thought is the content, the action the call', () => {
    const text =
      'Thought: I need the current weather in Paris.\nAction: current_weather_for_weatherapi\nAction Input: {"city": "Paris"}';
    expect(react(text)).toEqual({
      calls: [{ name: 'current_weather_for_weatherapi', arguments: { city: 'Paris' } }],
      errors: [],
      content: 'Thought: I need the current weather in Paris.',
    });
  });

  it('reads Finish with a multi-line JSON input and stops at a hallucinated observation', () => {
    const text =
      'Thought: I have it.\nAction: Finish\nAction Input: {\n  "return_type": "give_answer",\n  "final_answer": "It is 18°C {sunny} in Paris."\n}\nObservation: {"response": "made up"}\nThought: again\nAction: x';
    expect(react(text).calls).toEqual([
      {
        name: 'Finish',
        arguments: { return_type: 'give_answer', final_answer: 'It is 18°C {sunny} in Paris.' },
      },
    ]);
  });

  it("takes the first action only, as ToolLLaMA and the seed do; normalises the seed's spaced names", () => {
    const text =
      'Action: Current Weather for WeatherAPI\nAction Input: {"city": "Oslo"}\nAction: other\nAction Input: {}';
    expect(react(text).calls).toEqual([
      { name: 'current_weather_for_weatherapi', arguments: { city: 'Oslo' } },
    ]);
    expect(react('Action: `lookup()`\nAction Input:').calls).toEqual([{ name: 'lookup', arguments: {} }]);
  });

  it('reports a malformed step as a parse error the reward sees', () => {
    expect(react('Thought: hmm\nAction: search_for_x').errors[0]?.message).toMatch(
      /has no "Action Input:" line/,
    );
    expect(react('Action: f\nAction Input: city=Paris').errors[0]?.message).toMatch(/is not a JSON object/);
    expect(react('Action: f\nAction Input: {"a": 1,}').errors[0]?.message).toMatch(/is not valid JSON/);
    expect(react('Action:\nAction Input: {}').errors[0]?.message).toMatch(/names no function/);
  });

  it('an answer without an action is content, no call', () => {
    expect(react('The weather is fine.')).toEqual({ calls: [], errors: [], content: 'The weather is fine.' });
  });

  it('renders calls the way it parses them, and keeps tools out of the chat template', () => {
    const parser = getParser('react');
    const calls = [{ name: 'Finish', arguments: { return_type: 'give_up' } }];
    expect(parser.render(calls)).toBe('Action: Finish\nAction Input: {"return_type":"give_up"}');
    expect(parser.parse(parser.render(calls)).calls).toEqual(calls);
    expect(parser.toolsInTemplate).toBe(false);
    expect(getParser('hermes').toolsInTemplate).toBeUndefined();
  });

  it('an unclosed object is one error, its snippet short', () => {
    const r = react(`Action: f\nAction Input: ${'{'.repeat(200_000)}`);
    expect(r.errors).toHaveLength(1);
    expect(r.errors[0]!.snippet.length).toBeLessThanOrEqual(201);
  });
});
