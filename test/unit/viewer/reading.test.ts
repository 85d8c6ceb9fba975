// The viewer's reading of a live run's JSON lines (a line being appended, a line a crash tore) and its per-sample
// advantages for the outcome estimators, with arithmetic done by hand.
import { describe, expect, it } from 'vitest';
import { groupAdvantages } from '#shared/viewer/advantages';
import { promptLength, promptText } from '#shared/viewer/conversation';
import { parseJsonLines } from '#shared/viewer/metrics';

describe('parseJsonLines', () => {
  it('keeps every whole line and names the cut-short last one', () => {
    const r = parseJsonLines('{"step": 1}\n\n{"step": 2}\n{"step": 3, "rew', 'm.jsonl');
    expect(r.rows).toEqual([{ step: 1 }, { step: 2 }]);
    expect(r.problems).toEqual([
      {
        key: 'm.jsonl',
        message: expect.stringMatching(/^line 4, the last, is cut short \(16 characters, no newline/),
      },
    ]);
  });

  it('calls a bad line in the middle not JSON, not torn', () => {
    const r = parseJsonLines('{"step": 1}\nnope\n{"step": 3}\n', 'm.jsonl');
    expect(r.rows).toEqual([{ step: 1 }, { step: 3 }]);
    expect(r.problems[0]!.message).toMatch(/^line 2 is not JSON/);
  });
});

describe('groupAdvantages', () => {
  const cfg = { adv_estimator: 'grpo', norm_adv_by_std_in_grpo: true, use_kl_in_reward: false } as const;

  it('grpo: (r - mean) / (std + 1e-6), std unbiased', () => {
    // rewards 0, 0, 1, 1: mean 0.5, unbiased std = sqrt((4 x 0.25) / 3) = 0.57735
    const { advantages } = groupAdvantages([0, 0, 1, 1], cfg);
    const a = 0.5 / (Math.sqrt(1 / 3) + 1e-6);
    expect(advantages).toEqual([-a, -a, a, a].map((x) => expect.closeTo(x, 12)));
  });

  it('grpo without the std, dr_grpo and rloo', () => {
    // rewards 1, 2, 6: mean 3
    expect(groupAdvantages([1, 2, 6], { ...cfg, norm_adv_by_std_in_grpo: false }).advantages).toEqual([
      -2, -1, 3,
    ]);
    expect(groupAdvantages([1, 2, 6], { ...cfg, adv_estimator: 'dr_grpo' }).advantages).toEqual([-2, -1, 3]);
    // rloo: G/(G-1) (r - mean) = 1.5 x (-2, -1, 3); r_0 - mean(2, 6) = 1 - 4 = -3 checks the first
    expect(groupAdvantages([1, 2, 6], { ...cfg, adv_estimator: 'rloo' }).advantages).toEqual([-3, -1.5, 4.5]);
    expect(groupAdvantages([5], { ...cfg, adv_estimator: 'rloo' }).advantages).toEqual([0]);
  });

  it('shows none for token-level estimators, and says why', () => {
    const r = groupAdvantages([0, 1], { ...cfg, adv_estimator: 'gae' });
    expect(r.advantages).toBeNull();
    expect(r.note).toMatch(/gae gives token-level advantages .*critic/);
    expect(groupAdvantages([0, 1], { ...cfg, use_kl_in_reward: true }).note).toMatch(/KL penalty/);
  });
});

describe('promptLength', () => {
  it("ends the prompt before the first sampled turn, past the prompt's own assistant messages", () => {
    const m = (role: string, content = '') => ({ role, content });
    // a few-shot prompt (user, assistant, user), then two sampled turns with a tool result between them
    const t = {
      messages: [
        m('user', 'q1'),
        m('assistant', 'a1'),
        m('user', 'q2'),
        m('assistant'),
        m('tool'),
        m('assistant'),
      ],
      turns: [{}, {}],
    };
    expect(promptLength(t)).toBe(3);
    expect(promptText(t)).toBe('q2');
    expect(promptLength({ messages: [m('user', 'q')], turns: [] })).toBe(1);
  });
});
