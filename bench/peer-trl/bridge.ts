// The peer benchmark's bridge: TRL's GRPOTrainer (Python) calls toolrl's own calculator and scores its episodes
// with toolrl's own `toolcall` reward, over JSON lines on stdin/stdout, so both systems see the same tool outputs
// and the same reward code. Run by bench/peer-trl/trl_grpo.py as `tsx bench/peer-trl/bridge.ts RUN.yaml`.
//
// Requests, one JSON object a line; one reply a line, in order:
//   {"op": "call", "name": "calculator", "arguments": {...}}        -> {"text": what the model reads, "result"}
//   {"op": "score", "episodes": [{"completion": text, "groundTruth": "628"}, ...]}
//                                                                    -> {"scores": [{"score", "components"}, ...]}
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { loadRunConfig, resolveRun } from '#shared/config/resolve';
import { buildReward } from '#shared/rewards/build';
import { normaliseRewardInput, type RewardInputFile } from '#shared/rewards/input';
import type { RunConfig } from '#shared/schemas/config/run';
import type { ToolResult } from '#shared/schemas/tool-result';
import { buildToolRegistry } from '#shared/tools/registry';
import { renderToolResult } from '#shared/tools/render';

const ASSISTANT = '<|im_start|>assistant\n';
const END = '<|im_end|>';

/** Name and arguments with sorted keys: how a call TRL executed is found again when its episode is scored. */
export function callKey(name: string, args: unknown): string {
  const sorted = (_k: string, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v;
  return `${name}\u0000${JSON.stringify(args ?? {}, sorted)}`;
}

/**
 * A TRL completion (every token after the prompt, decoded with special tokens: the assistant turns and, between
 * them, the tool responses the chat template rendered) as a reward input: one turn per assistant segment, its
 * calls parsed from its text by toolrl's parser and given the results the bridge returned when TRL executed them.
 * A segment that did not end with <|im_end|> was cut by the token budget (`length`).
 */
export function episodeFromCompletion(
  completion: string,
  groundTruth: unknown,
  results: ReadonlyMap<string, ToolResult>,
  toolNames: readonly string[],
  format: string,
  parse: (text: string, format: string) => { calls: { name: string; arguments: unknown }[] },
): RewardInputFile {
  // The first segment has no header (the prompt ended with it); later ones follow a tool response.
  const segments = completion.split(ASSISTANT);
  const turns = segments.map((segment, i) => {
    const end = segment.indexOf(END);
    const text = end >= 0 ? segment.slice(0, end) : segment;
    const calls = parse(text, format).calls;
    const last = i === segments.length - 1;
    const stop: 'eos' | 'tool_call' | 'length' =
      end < 0 ? 'length' : !last || calls.length > 0 ? 'tool_call' : 'eos';
    return {
      text,
      stop,
      toolCalls: calls.map((c) => {
        const result = results.get(callKey(c.name, c.arguments));
        return { name: c.name, arguments: c.arguments, ...(result ? { result } : {}) };
      }),
    };
  });
  const lastStop = turns.at(-1)?.stop;
  const finishReason =
    lastStop === 'eos' ? 'eos' : lastStop === 'length' ? 'length' : ('max_tool_calls' as const);
  return { turns, finishReason, ground_truth: groundTruth, tools: [...toolNames] };
}

const RequestSchema = z.discriminatedUnion('op', [
  z.object({ op: z.literal('call'), name: z.string(), arguments: z.unknown() }),
  z.object({
    op: z.literal('score'),
    episodes: z.array(z.object({ completion: z.string(), groundTruth: z.unknown() })),
  }),
]);

async function serve(configPath: string): Promise<void> {
  const { parseToolCalls } = await import('#shared/parsing/registry');
  const { config }: { config: RunConfig } = loadRunConfig(
    readFileSync(configPath, 'utf8'),
    configPath,
    [],
    dirname(resolve(configPath)),
  );
  const baseDir = dirname(resolve(configPath));
  const mt = config.rollout.multi_turn;
  // The run's tools as the stages get them (resolved: toolrl's names, a tools file inlined).
  const { run } = resolveRun(config, (f) => readFileSync(resolve(baseDir, f), 'utf8'));
  // Truncated in characters: the calculator's outputs are far under the token limit, so no tokenizer is needed.
  const tools = await buildToolRegistry(run.tools, {
    baseDir,
    truncate: { maxLength: mt.max_tool_response_length, side: mt.tool_response_truncate_side },
  });
  const reward = await buildReward(config.reward, { baseDir });
  const results = new Map<string, ToolResult>();
  const reply = (v: unknown) => process.stdout.write(`${JSON.stringify(v)}\n`);
  for await (const line of createInterface({ input: process.stdin })) {
    if (!line.trim()) continue;
    const req = RequestSchema.parse(JSON.parse(line));
    if (req.op === 'call') {
      const result = await tools.call({ name: req.name, arguments: req.arguments });
      results.set(callKey(req.name, req.arguments), result);
      reply({ text: renderToolResult(result), result });
    } else {
      const scores = [];
      for (const e of req.episodes) {
        const file = episodeFromCompletion(
          e.completion,
          e.groundTruth,
          results,
          tools.names(),
          mt.tool_parser_format,
          parseToolCalls,
        );
        const out = await reward(normaliseRewardInput(file, mt.tool_parser_format));
        scores.push({ score: out.score, components: out.components });
      }
      reply({ scores });
    }
  }
  await tools.close();
  await reward.close?.();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const configPath = process.argv[2];
  if (!configPath) {
    process.stderr.write('usage: tsx bench/peer-trl/bridge.ts RUN.yaml\n');
    process.exit(2);
  }
  await serve(configPath);
}
