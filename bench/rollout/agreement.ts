// The agreement check beside the speed tables of a real model: do the engine's bundles and llama.cpp on the GGUF
// predict the same next tokens? llama.cpp continues a chat prompt greedily for k tokens, reporting its top 5 at
// each position; the engine reads the same k positions of prompt + those tokens in one pass. Per bundle: how often
// the most likely token is the same, how many of llama.cpp's top 5 are in the engine's, and the largest difference
// between the two probabilities of one of llama.cpp's top-5 tokens.
import { ChatTokenizer } from '#shared/policy/tokenizer';
import type { ProbeResult } from './child.ts';

/** A fixed conversation, rendered with the bundle's chat template (generation prompt added). */
const MESSAGES = [
  { role: 'user' as const, content: 'What is the capital of France? Answer in one short sentence.' },
];

export async function agreementPrompt(bundleDir: string): Promise<number[]> {
  const tokenizer = await ChatTokenizer.load(bundleDir);
  return tokenizer.encode(tokenizer.render(MESSAGES, [], { addGenerationPrompt: true }));
}

export interface Agreement {
  dtype: string;
  gguf: string;
  promptTokens: number;
  positions: number;
  /** Positions whose most likely token is the same. */
  top1: number;
  /** Mean over positions of |engine top 5 ∩ llama.cpp top 5| / 5. */
  top5Overlap: number;
  /** Largest |p_engine - p_llama.cpp| over llama.cpp's top-5 tokens at every position. */
  maxProbDiff: number;
}

export function compareTops(
  ref: ProbeResult,
  ours: ProbeResult,
): Omit<Agreement, 'dtype' | 'gguf' | 'promptTokens'> {
  const k = ref.top.length;
  if (ours.top.length !== k || !ours.asked) throw new Error('the two sides probed different positions');
  let top1 = 0;
  let overlap = 0;
  let maxProbDiff = 0;
  for (let j = 0; j < k; j++) {
    const r = ref.top[j]!;
    const o = ours.top[j]!;
    if (r[0]?.id === o[0]?.id) top1++;
    const mine = new Set(o.map((x) => x.id));
    overlap += r.filter((x) => mine.has(x.id)).length / r.length;
    r.forEach((x, i) => {
      maxProbDiff = Math.max(maxProbDiff, Math.abs(x.p - ours.asked![j]![i]!));
    });
  }
  return { positions: k, top1, top5Overlap: overlap / k, maxProbDiff };
}

export function agreementTable(rows: readonly Agreement[]): string[] {
  if (rows.length === 0) return [];
  return [
    `Agreement with llama.cpp: its greedy continuation of a ${rows[0]!.promptTokens}-token chat prompt, ` +
      `${rows[0]!.positions} positions; the engine reads the same positions (teacher-forced). Probabilities at ` +
      'temperature 1 over the full vocabulary.',
    '',
    '| bundle | llama.cpp GGUF | same top-1 | top-5 overlap | max abs diff of a top-5 probability |',
    '|---|---|---|---|---|',
    ...rows.map(
      (a) =>
        `| ${a.dtype} | ${a.gguf.toUpperCase()} | ${a.top1}/${a.positions} | ` +
        `${(100 * a.top5Overlap).toFixed(0)}% | ${a.maxProbDiff.toFixed(3)} |`,
    ),
  ];
}
