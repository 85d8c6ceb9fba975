// Python reward functions: `reward.functions: [{path: rewards/my_reward.py, name: compute_score, weight: 1}]` with
// verl's signature, compute_score(data_source, solution_str, ground_truth, extra_info, **config), returning a
// number or a dict with `score` (its other numbers become components), or verl's batched form with `batched: true`.
// They run in one Python host per run (shared/pyhost). A call that raises or runs past `timeout` is that
// trajectory's reward error: the part scores 0, its `error` component is 1, and the message is kept on the
// trajectory; the batch goes on.
//
// What the function reads: `solution_str` is the response as the model wrote and read it, each assistant turn's
// text (tool calls included) followed by the tool results appended after it; `extra_info` is the row's, plus
// verl's `num_turns` and `rollout_reward_scores` (the stateful tools' calc_reward by tool name).

import { PythonHost, PythonHostError } from '#shared/pyhost/host';
import { type ScoreResult, ScoreResultSchema } from '#shared/pyhost/protocol';
import { type RewardFunctionSpec, rewardLabel } from '#shared/schemas/config/reward';
import { resolveUserFile } from '#shared/tools/python/tool';
import type { RewardInput } from './input.ts';
import type { RewardOutput } from './types.ts';

const DEFAULT_TIMEOUT_S = 60;
/** Items of a batched function sent in one call at most. */
const MAX_BATCH = 256;

export interface PythonRewardItem {
  dataSource: string | null;
  solutionStr: string;
  groundTruth: unknown;
  extraInfo: Record<string, unknown>;
}

/** The response text and verl's turn count: assistant turns as written, each followed by what was appended. */
export function responseOf(input: RewardInput): { text: string; numTurns: number } {
  const parts: string[] = [];
  let responses = 0;
  const first = input.messages.findIndex((m) => m.role === 'assistant');
  if (first >= 0) {
    let turn = 0;
    let inResponse = false;
    for (const m of input.messages.slice(first)) {
      if (m.role === 'assistant') {
        parts.push(input.turns[turn++]?.text ?? m.content ?? '');
        inResponse = false;
      } else {
        parts.push(typeof m.content === 'string' ? m.content : JSON.stringify(m.content));
        if (!inResponse) responses++;
        inResponse = true;
      }
    }
  } else {
    for (const t of input.turns) {
      parts.push(t.text);
      const results = t.calls.flatMap((c) =>
        c.result
          ? [
              c.result.ok
                ? c.result.output
                : `${c.result.output}\nError: ${c.result.error?.message ?? ''}`.trim(),
            ]
          : [],
      );
      if (results.length) {
        parts.push(...results);
        responses++;
      }
    }
  }
  // verl's __num_turns__: assistant turns + the turns that appended responses + the prompt.
  return { text: parts.join('\n'), numTurns: input.turns.length + responses + 1 };
}

export function rewardItem(input: RewardInput): PythonRewardItem {
  const { text, numTurns } = responseOf(input);
  return {
    dataSource: input.dataSource,
    solutionStr: text,
    groundTruth: input.groundTruth,
    extraInfo: { ...input.extraInfo, num_turns: numTurns, rollout_reward_scores: input.toolRewards ?? {} },
  };
}

export function pythonRewardHost(baseDir: string, python?: string): PythonHost {
  return new PythonHost({ label: 'the Python reward host', python, baseDir });
}

interface Waiting {
  item: PythonRewardItem;
  resolve: (r: ScoreResult) => void;
}

/** One Python reward function, loaded into the host; `score` scores one trajectory (batched ones are pooled). */
export class PythonReward {
  readonly label: string;
  private readonly key: string;
  private readonly timeoutS: number;
  private readonly batched: boolean;
  private queue: Waiting[] = [];

  private constructor(
    private readonly host: PythonHost,
    spec: RewardFunctionSpec,
    key: string,
  ) {
    this.label = rewardLabel(spec);
    this.key = key;
    this.timeoutS = spec.timeout ?? DEFAULT_TIMEOUT_S;
    this.batched = spec.batched ?? false;
  }

  static async load(
    host: PythonHost,
    spec: RewardFunctionSpec,
    key: string,
    baseDir: string,
  ): Promise<PythonReward> {
    const kwargs = spec.reward_kwargs ?? spec.config;
    try {
      await host.setup('load_reward', {
        key,
        path: resolveUserFile(baseDir, spec.path!),
        name: spec.name,
        label: `${spec.name} from ${spec.path}`,
        kwargs,
        batched: spec.batched ?? false,
      });
    } catch (err) {
      throw new Error(`reward ${spec.name} from ${spec.path}: ${(err as Error).message}`);
    }
    return new PythonReward(host, spec, key);
  }

  async score(input: RewardInput): Promise<RewardOutput> {
    const r = this.batched
      ? await this.pooled(rewardItem(input))
      : (await this.send([rewardItem(input)]))[0]!;
    if (r.ok) return { score: r.score, components: { ...r.extra, error: 0 } };
    return {
      score: 0,
      components: { error: 1 },
      errors: [{ reward: this.label, message: `${r.error.type}: ${r.error.message}` }],
    };
  }

  private async send(items: PythonRewardItem[]): Promise<ScoreResult[]> {
    try {
      const out = ScoreResultSchema.parse(
        await this.host.request('score', { key: this.key, items }, { timeoutS: this.timeoutS }),
      );
      return out.results;
    } catch (err) {
      // The host itself failed (died, hung, answered nonsense): every item of the call gets that reason.
      const type = err instanceof PythonHostError ? err.type : 'internal';
      const failed: ScoreResult = { ok: false, error: { type, message: (err as Error).message } };
      return items.map(() => failed);
    }
  }

  /** Scores requested in the same turn of the event loop go to a batched function together. */
  private pooled(item: PythonRewardItem): Promise<ScoreResult> {
    return new Promise((resolve) => {
      this.queue.push({ item, resolve });
      if (this.queue.length === 1) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length) {
      const batch = this.queue.splice(0, MAX_BATCH);
      const results = await this.send(batch.map((w) => w.item));
      for (const [i, w] of batch.entries()) w.resolve(results[i]!);
    }
  }
}
