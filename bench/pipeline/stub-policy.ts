// A stand-in policy for the pipeline benchmark: every sample calls the calculator in its first turn and
// boxes the answer in its second, with fixed token counts, so the benchmark measures the pipeline
// (queues, blobs, handlers), not the model.
import type { PolicyLease, PolicyProvider, RolloutPolicy } from '#shared/pipeline/policies';
import type { Continuation, GroupStart, TurnSample } from '#shared/policy/policy';
import type { SamplingParams } from '#shared/policy/sampler';
import type { TokenState } from '#shared/policy/token-state';
import type { ChatMessage, ToolSchema } from '#shared/schemas/chat';

export const STUB_SHAPE = { promptTokens: 64, callTokens: 24, appendedTokens: 12, answerTokens: 8 } as const;

const CALL = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "17 * 23"}}\n</tool_call>';
const ANSWER = 'The answer is \\boxed{391}.';
const ids = (n: number, start: number) => Array.from({ length: n }, (_, i) => start + i);

function sample(turn: number): TurnSample {
  const n = turn === 0 ? STUB_SHAPE.callTokens : STUB_SHAPE.answerTokens;
  return {
    tokenIds: ids(n, 100 + turn * 50),
    logprobs: Array.from({ length: n }, () => -0.5),
    stop: turn === 0 ? 'tool_call' : 'eos',
    text: turn === 0 ? CALL : ANSWER,
  };
}

function append(state: TokenState, tokens: number[], sampled: boolean, version: number): TokenState {
  return {
    ...state,
    tokenIds: [...state.tokenIds, ...tokens],
    lossMask: [...state.lossMask, ...tokens.map(() => (sampled ? 1 : 0) as 0 | 1)],
    behaviorLogprobs: [...state.behaviorLogprobs, ...tokens.map(() => (sampled ? -0.5 : 0))],
    policyVersions: [...state.policyVersions, ...tokens.map(() => (sampled ? version : -1))],
  };
}

export class StubPolicy implements RolloutPolicy {
  readonly tokenizer = {
    render: (messages: readonly ChatMessage[]) => messages.map((m) => m.content).join('\n'),
    encode: () => ids(STUB_SHAPE.promptTokens, 1),
  };

  constructor(readonly version: number) {}

  async startGroup(
    messages: readonly ChatMessage[],
    tools: readonly ToolSchema[],
    n: number,
    s: SamplingParams,
  ): Promise<GroupStart> {
    const promptIds = ids(STUB_SHAPE.promptTokens, 1);
    const samples = Array.from({ length: n }, () => sample(0));
    const states = samples.map((smp, i) => {
      const base: TokenState = {
        schemaVersion: 1,
        sampleIndex: i,
        seed: s.seed,
        tokenIds: [...promptIds],
        promptLength: promptIds.length,
        lossMask: promptIds.map(() => 0 as const),
        behaviorLogprobs: promptIds.map(() => 0),
        policyVersions: promptIds.map(() => -1),
        messages: messages.map((m) => ({ ...m })),
        tools: tools.map((t) => ({ ...t })),
        text: '',
        turns: [],
        prefixChecks: [],
        cacheKey: null,
      };
      const after = append(base, smp.tokenIds, true, this.version);
      return {
        ...after,
        messages: [...after.messages, { role: 'assistant' as const, content: smp.text }],
        turns: [
          {
            turn: 0,
            policyVersion: this.version,
            tokenStart: 64,
            tokenEnd: 88,
            stop: smp.stop,
            text: smp.text,
          },
        ],
      };
    });
    return { promptIds, states, samples };
  }

  async continueTrajectory(state: TokenState, messages: readonly ChatMessage[]): Promise<Continuation> {
    const smp = sample(1);
    const withTools = append(state, ids(STUB_SHAPE.appendedTokens, 900), false, this.version);
    const start = withTools.tokenIds.length;
    const after = append(withTools, smp.tokenIds, true, this.version);
    return {
      state: {
        ...after,
        messages: [...after.messages, ...messages, { role: 'assistant', content: smp.text }],
        turns: [
          ...after.turns,
          {
            turn: after.turns.length,
            policyVersion: this.version,
            tokenStart: start,
            tokenEnd: start + smp.tokenIds.length,
            stop: smp.stop,
            text: smp.text,
          },
        ],
      },
      sample: smp,
      budgetExhausted: false,
    };
  }

  /** The stub keeps no KV cache. */
  endTrajectory(): void {}

  async dispose(): Promise<void> {}
}

export class StubPolicyProvider implements PolicyProvider {
  async acquire(_runId: string, pinned: number | null): Promise<PolicyLease> {
    return { policy: new StubPolicy(pinned ?? 0), version: pinned ?? 0, release() {} };
  }

  async close(): Promise<void> {}
}
