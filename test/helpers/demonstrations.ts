// Warm-start data for tests whose tiny model must call a tool: each of the test's own rows answered correctly
// (call the calculator with the question's operands, box its result), offering the tool schema the run offers, so
// that the prompt the model learns on is the one it samples from.
import type { DatasetRow } from '#shared/schemas/dataset-row';

/**
 * A warm start made certain by construction: each row's own correct demonstration (call the calculator with the
 * question's operands, read the result, box it), offering `schema`. A short SFT on these memorises exactly the
 * trajectories a test then samples, so what the test asserts does not hang on what a tiny model happens to
 * generalise in a few steps (which differs between CPUs' float rounding). Pair it with `expectMemorised`.
 */
export function rowDemonstrations(rows: readonly DatasetRow[], schema: unknown): string {
  const lines = rows.map((row) => {
    const user = row.prompt.at(-1)?.content ?? '';
    const q = /What is (\d+) (plus|minus) (\d+)\?/.exec(user);
    if (!q) throw new Error(`not a quickstart question: ${user}`);
    const expression = `${q[1]} ${q[2] === 'plus' ? '+' : '-'} ${q[3]}`;
    const result = String(row.reward_model?.ground_truth);
    const messages = [
      ...row.prompt,
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ type: 'function', function: { name: 'calculator', arguments: { expression } } }],
      },
      { role: 'tool', name: 'calculator', content: result },
      { role: 'assistant', content: `\\boxed{${result}}` },
    ];
    return JSON.stringify({ messages, tools: [schema] });
  });
  return `${lines.join('\n')}\n`;
}

/**
 * `trainer.sft` for a warm start on `rowDemonstrations` (a handful of rows): long enough, with a warmup and a
 * decaying learning rate, to memorise them rather than to generalise.
 */
export const memoriseSft = (data: string) => ({
  data,
  steps: 150,
  lr: 5.0e-3,
  batch_size: 16,
  lr_scheduler: 'cosine',
  warmup_steps: 20,
  min_lr_ratio: 0.1,
});

/**
 * The SFT warm start's last loss (token-mean cross-entropy on the demonstrations' assistant tokens). A test that
 * warm-starts on `rowDemonstrations` checks it is below `level` before asserting on what the model samples: at a
 * token-mean loss of 0.02 a 40-token call is sampled whole at temperature 1 with probability about e^-0.8 = 0.45
 * per sample, so a group of 4 samples misses it with probability under 0.1 per prompt; the loss falls to 0.0005 on
 * the AMD EPYC machines (memorising two rows: test/integration/python-code.test.ts), 40x inside the level.
 */
export function lastSftLoss(lines: readonly { type: string; loss?: number }[]): number {
  const sft = lines.flatMap((l) => (l.type === 'sft' && l.loss !== undefined ? [l.loss] : []));
  if (sft.length === 0) throw new Error('the run had no SFT warm start');
  return sft.at(-1)!;
}
