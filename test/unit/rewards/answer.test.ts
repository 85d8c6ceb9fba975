import { describe, expect, it } from 'vitest';
import {
  answerTag,
  equationValue,
  extractAnswer,
  finalAnswerLine,
  goldAnswers,
  lastBoxed,
  mathAnswersEqual,
  normaliseText,
  parseMathNumber,
} from '#shared/rewards/index';

describe('answer extraction', () => {
  it('takes the last \\boxed{} with nested braces', () => {
    expect(lastBoxed('first \\boxed{1}, then \\boxed{\\frac{3}{4}} end')).toBe('\\frac{3}{4}');
    expect(lastBoxed('\\boxed {  x^{2}  }')).toBe('x^{2}');
    expect(lastBoxed('$\\boxed 5$')).toBe('5');
    expect(lastBoxed('\\fbox{7}')).toBe('7');
    expect(lastBoxed('\\boxed{unclosed {')).toBeNull();
    expect(lastBoxed('\\boxedtext')).toBeNull();
    expect(lastBoxed('no box')).toBeNull();
  });

  it('takes the last closed <answer> tag', () => {
    expect(answerTag('<answer>a</answer> then <answer> Paris </answer>')).toBe('Paris');
    expect(answerTag('<answer>open')).toBeNull();
  });

  it('reads "final answer" lines without markdown or the final period', () => {
    expect(finalAnswerLine('Work...\n**Final Answer:** 42.')).toBe('42');
    expect(finalAnswerLine('so the answer is 17 apples\nthanks')).toBe('17 apples');
    expect(finalAnswerLine('The answer: 1\nThe answer: 2')).toBe('2');
    expect(finalAnswerLine('no conclusion')).toBeNull();
  });

  it('reads Chinese lead-ins, up to the end of the sentence', () => {
    expect(finalAnswerLine('答案是 925。')).toBe('925');
    expect(finalAnswerLine('计算器返回了 925，所以答案是 925。')).toBe('925');
    expect(finalAnswerLine('答案：925')).toBe('925');
    expect(finalAnswerLine('答案:925')).toBe('925');
    expect(finalAnswerLine('最终答案为 3/4。因为……')).toBe('3/4');
    expect(finalAnswerLine('结果是：**42**')).toBe('42');
    expect(finalAnswerLine('二十五乘以三十七等于925')).toBe('925');
    expect(finalAnswerLine('北京是中国的首都。')).toBeNull();
  });

  it('reads the value of a closing `expr = value`', () => {
    expect(equationValue('25 * 37 = 925')).toBe('925');
    expect(equationValue('所以 25 × 37 = 925。')).toBe('925');
    expect(equationValue('first 2 + 2 = 4\nthen 4 * 3 = 12.')).toBe('12');
    expect(equationValue('$x = \\frac{1}{2}$')).toBe('\\frac{1}{2}');
    expect(equationValue('a == b and c <= d, x != y')).toBeNull();
    expect(equationValue('no equation')).toBeNull();
    expect(equationValue('dangling =')).toBeNull();
  });

  it('auto tries answer tag, boxed, final-answer line, then the whole content', () => {
    expect(extractAnswer('\\boxed{1} <answer>2</answer>')).toBe('2');
    expect(extractAnswer('Final answer: 3 \\boxed{4}')).toBe('4');
    expect(extractAnswer('Final answer: 3')).toBe('3');
    expect(extractAnswer('答案是 925。')).toBe('925');
    expect(extractAnswer('The product:\n25 * 37 = 925')).toBe('925');
    expect(extractAnswer('答案是 925，而 25 * 37 = 925')).toBe('925');
    expect(extractAnswer('  Paris ')).toBe('Paris');
    expect(extractAnswer('   ')).toBeNull();
    expect(extractAnswer('Paris', 'boxed')).toBeNull();
  });

  it('finds golden answers in every ground-truth shape', () => {
    expect(goldAnswers('72')).toEqual(['72']);
    expect(goldAnswers(72)).toEqual(['72']);
    expect(goldAnswers(['a', ['b']])).toEqual(['a', 'b']);
    expect(goldAnswers({ target: ['Paris', 'Paris, France'] })).toEqual(['Paris', 'Paris, France']);
    expect(goldAnswers({ answer: '391', need_tool: true })).toEqual(['391']);
    expect(goldAnswers({ relevant_apis: [['a', 'b']] })).toEqual([]);
    expect(goldAnswers(null)).toEqual([]);
  });
});

describe('math answer equivalence', () => {
  it.each([
    ['0.75', '\\frac{3}{4}'],
    ['\\dfrac{1}{2}', '0.5'],
    ['\\frac12', '1/2'],
    ['-\\frac{3}{2}', '-1.5'],
    ['$1,000$', '1000'],
    ['1{,}000', '1000'],
    ['x = 5', '5'],
    ['2.5e3', '2500'],
    ['2.5 \\times 10^{3}', '2500'],
    ['50\\%', '50'],
    ['90^\\circ', '90'],
    ['1.(3)', '4/3'],
    ['3.0', '3'],
    ['\\boxed{7}', '7'],
    ['12 \\text{ cm}', '12'],
    ['\\left( 1, 2 \\right)', '(1,2)'],
    ['Yes', 'yes'],
  ])('%s equals %s', (a, b) => {
    expect(mathAnswersEqual(a, b)).toBe(true);
  });

  it.each([
    ['0.333333', '1/3'],
    ['3', '4'],
    ['1/0', '0'],
    ['', ''],
    ['x', 'y'],
  ])('%s differs from %s', (a, b) => {
    expect(mathAnswersEqual(a, b)).toBe(false);
  });

  it('a relative tolerance accepts floats printed by code', () => {
    // |0.1 + 0.2 printed - 0.3| = 4e-17, relative 1.5e-16 <= 1e-9.
    expect(mathAnswersEqual('0.30000000000000004', '0.3', { relTol: 1e-9 })).toBe(true);
    expect(mathAnswersEqual('0.30000000000000004', '0.3')).toBe(false);
    // |0.333333 - 1/3| / (1/3) = 1e-6: inside 1e-5, outside 1e-7.
    expect(mathAnswersEqual('0.333333', '1/3', { relTol: 1e-5 })).toBe(true);
    expect(mathAnswersEqual('0.333333', '1/3', { relTol: 1e-7 })).toBe(false);
  });

  it('does not hand huge or odd literals to the rational parser', () => {
    expect(parseMathNumber('9'.repeat(10_000))).toBeNull();
    expect(parseMathNumber('1e999999')).toBeNull();
    expect(parseMathNumber('0x10')).toBeNull();
    expect(parseMathNumber('7')?.valueOf()).toBe(7);
  });
});

describe('text normalisation (SQuAD / Search-R1)', () => {
  it('drops case, punctuation, articles and extra spaces', () => {
    expect(normaliseText('  The  Eiffel-Tower, in PARIS!  ')).toBe('eiffeltower in paris');
    expect(normaliseText('An apple a day')).toBe('apple day');
    expect(normaliseText('３．５')).toBe('35');
  });
});
