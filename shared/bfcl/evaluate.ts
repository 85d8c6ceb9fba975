// `toolrl bfcl eval`: a policy's greedy episodes on BFCL multi-turn rows, judged by BFCL's checker exactly as the
// `bfcl` reward judges training trajectories. Accuracy is BFCL's leaderboard metric (all turns pass); progress is
// the mean fraction of turns passed.
import { readDataset } from '#shared/data/dataset';
import { loadPolicy } from '#shared/policy/policy';
import { rewardInputFromTrajectory } from '#shared/rewards/input';
import type { MultiTurnConfig } from '#shared/schemas/config/rollout';
import type { FinishReason } from '#shared/schemas/trajectory';
import { buildToolRegistry } from '#shared/tools/registry';
import './register-tool.ts'; // the registry it builds must know the bfcl kind
import { type BfclCheck, checkTrajectory } from './check.ts';
import { sharedBfclEnv } from './client.ts';
import { runEpisode } from './rollout.ts';

/** Budgets for BFCL's episodes: several user turns, each with a few steps of calls. */
export const EVAL_MULTI_TURN: Partial<MultiTurnConfig> = {
  max_turns: 40,
  max_tool_calls: 80,
  max_parallel_calls: 16,
  max_total_response_length: 8192,
  max_tool_response_length: 4096,
  tool_response_truncate_side: 'left',
};

export interface BfclEvalOptions {
  /** Rollout bundle folder. */
  policy: string;
  /** Parquet of BFCL rows (`toolrl bfcl dataset`). */
  data: string;
  maxSamples?: number;
  multiTurn?: Partial<MultiTurnConfig>;
  maxNewTokens?: number;
  threads?: number;
  python?: string;
  onEntry?: (result: EntryResult, done: number, total: number) => void;
}

export interface EntryResult extends Omit<BfclCheck, 'turns'> {
  id: string;
  category: string;
  finishReason: FinishReason;
  assistantTurns: number;
  toolCalls: number;
  /** Per user turn: passed, and which check failed. */
  checks: BfclCheck['turns'];
}

export interface CategoryScore {
  entries: number;
  accuracy: number;
  progress: number;
}

export interface BfclEvalSummary {
  policy: string;
  data: string;
  entries: number;
  accuracy: number;
  progress: number;
  byCategory: Record<string, CategoryScore>;
  seconds: number;
  results: EntryResult[];
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

function summarise(results: EntryResult[]): CategoryScore {
  return {
    entries: results.length,
    accuracy: mean(results.map((r) => r.success)),
    progress: mean(results.map((r) => r.progress)),
  };
}

export async function evaluateBfcl(opts: BfclEvalOptions): Promise<BfclEvalSummary> {
  const started = performance.now();
  const rows = (await readDataset(opts.data)).slice(0, opts.maxSamples);
  if (rows.length === 0) throw new Error(`${opts.data} has no rows`);
  const multiTurn = { ...EVAL_MULTI_TURN, ...opts.multiTurn };
  const registry = await buildToolRegistry(
    { tools: [{ kind: 'bfcl', config: opts.python ? { python: opts.python } : {} }] },
    {
      truncate: {
        maxLength: multiTurn.max_tool_response_length!,
        side: multiTurn.tool_response_truncate_side!,
      },
    },
  );
  const policy = await loadPolicy(opts.policy, opts.threads ? { threads: opts.threads } : {});
  const env = sharedBfclEnv(opts.python ? { python: opts.python } : {});
  const results: EntryResult[] = [];
  try {
    for (const row of rows) {
      const { episode } = await runEpisode({
        policy,
        registry,
        row,
        multiTurn,
        sampling: {
          temperature: 0,
          topP: 1,
          topK: 0,
          maxNewTokens: opts.maxNewTokens ?? 512,
          seed: 0,
          stopOnToolCallEnd: true,
        },
      });
      const input = rewardInputFromTrajectory(
        { turns: episode.turns, finishReason: episode.finishReason!, messages: episode.messages },
        {
          groundTruth: row.reward_model.ground_truth,
          dataSource: row.data_source,
          extraInfo: row.extra_info,
        },
      );
      const { turns, ...check } = await checkTrajectory(env, input);
      const result: EntryResult = {
        id: String(row.extra_info.id ?? row.extra_info.index),
        category: String(row.extra_info.category ?? row.data_source),
        ...check,
        finishReason: episode.finishReason!,
        assistantTurns: episode.turns.length,
        toolCalls: episode.turns.reduce((n, t) => n + t.toolCalls.length, 0),
        checks: turns,
      };
      results.push(result);
      opts.onEntry?.(result, results.length, rows.length);
    }
  } finally {
    await policy.dispose();
    await registry.close();
  }
  const byCategory: Record<string, CategoryScore> = {};
  for (const c of [...new Set(results.map((r) => r.category))].sort())
    byCategory[c] = summarise(results.filter((r) => r.category === c));
  const all = summarise(results);
  return {
    policy: opts.policy,
    data: opts.data,
    entries: all.entries,
    accuracy: all.accuracy,
    progress: all.progress,
    byCategory,
    seconds: (performance.now() - started) / 1000,
    results,
  };
}
