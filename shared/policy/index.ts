// The rollout policy engine's public surface: load a bundle, sample groups, continue trajectories.

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
export { DEFAULT_SAMPLING, type SamplingParams, samplingParams } from './sampler.ts';
export {
  type PrefixCheck,
  responseLength,
  type TokenState,
  TokenStateSchema,
  type TurnTokens,
  trajectoryTokens,
} from './token-state.ts';
export { PrefixBreakError } from './turns.ts';
