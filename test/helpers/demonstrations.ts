// Warm-start data for runs whose tiny model must call a tool: the quickstart's demonstrations that call the
// calculator with the question's own operands and box its result (its other 45% copy an operand wrong or skip the
// tool), offering the tool schema the run offers, so that the prompt the model learns on is the one it samples
// from. A tiny model learns the call format from these in fewer steps than from the mixed set.

import { join } from 'node:path';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
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
