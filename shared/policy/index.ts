// The rollout policy engine's public surface: load a bundle, sample groups, continue trajectories.
import type { RolloutConfig } from '#shared/schemas/config/rollout';
import type { SamplingParams } from './sampler.ts';

export { BundleError } from './bundle.ts';
export {
  type Continuation,
  type ContinueResult,
  type GroupStart,
  type LoadPolicyOptions,
  loadPolicy,
  Policy,
  type PolicyMetrics,
  type TurnSample,
} from './policy.ts';
export { DEFAULT_SAMPLING, type SamplingParams } from './sampler.ts';
export {
  type PrefixCheck,
  responseLength,
  type TokenState,
  TokenStateSchema,
  type TurnTokens,
  trajectoryTokens,
} from './token-state.ts';
export { PrefixBreakError } from './turns.ts';

/** Sampling parameters from the run config's `rollout:` block (verl's names -> the engine's). */
export function samplingFromConfig(
  r: RolloutConfig,
  overrides: Partial<SamplingParams> = {},
): SamplingParams {
  return {
    temperature: r.temperature,
    topP: r.top_p,
    topK: r.top_k,
    maxNewTokens: r.max_new_tokens,
    seed: r.seed,
    stopOnToolCallEnd: true,
    maxTotalResponseTokens: r.multi_turn.max_total_response_length,
    ...overrides,
  };
}
