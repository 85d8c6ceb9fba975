// Warm-start data for runs whose tiny model must call a tool: the quickstart's demonstrations that call the
// calculator with the question's own operands and box its result (its other 45% copy an operand wrong or skip the
// tool), offering the tool schema the run offers, so that the prompt the model learns on is the one it samples
// from. A tiny model learns the call format from these in fewer steps than from the mixed set.

import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import type { DatasetRow } from '#shared/schemas/dataset-row';
import { REPO_ROOT } from '../../bench/support/tiny-model.ts';

type Message = { role: string; content: string; tool_calls?: unknown[] };

/** `count` correct demonstrations as SFT JSONL (`{messages, tools}` per line) offering `schema`. */
export async function correctDemonstrations(count: number, schema: unknown): Promise<string> {
  const file = await asyncBufferFromFile(join(REPO_ROOT, 'examples', 'quickstart', 'data', 'sft.parquet'));
  const out: string[] = [];
  for (const row of (await parquetReadObjects({ file, columns: ['messages'] })) as { messages: string }[]) {
    const messages = JSON.parse(row.messages) as Message[];
    const [user, call, result, answer] = messages;
    const q = /What is (\d+) (plus|minus) (\d+)\?/.exec(user?.content ?? '');
    if (!q) continue;
    const expression = `${q[1]} ${q[2] === 'plus' ? '+' : '-'} ${q[3]}`;
    if (!JSON.stringify(call?.tool_calls ?? []).includes(`"expression":"${expression}"`)) continue;
    if (answer?.content !== `\\boxed{${result?.content}}`) continue;
    out.push(JSON.stringify({ messages, tools: [schema] }));
    if (out.length === count) break;
  }
  if (out.length < count) throw new Error(`the quickstart has only ${out.length} correct demonstrations`);
  return `${out.join('\n')}\n`;
}

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
