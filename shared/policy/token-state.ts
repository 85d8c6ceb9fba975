// Reading the token-level record of a trajectory being rolled out (TokenState, a contract declared in
// shared/schemas/token-state.ts because messages carry it).
import type { TokenState } from '#shared/schemas/token-state';

// Re-exported so the engine and its callers import the token state from one place.
export {
  type PrefixCheck,
  PrefixCheckSchema,
  type TokenState,
  TokenStateSchema,
  type TurnTokens,
  TurnTokensSchema,
} from '#shared/schemas/token-state';

/** The token-level fields of a RolloutTrajectory, copied out of a state. */
export function trajectoryTokens(s: TokenState): {
  sampleIndex: number;
  tokenIds: number[];
  promptLength: number;
  lossMask: (0 | 1)[];
  behaviorLogprobs: number[];
  policyVersions: number[];
  messages: TokenState['messages'];
} {
  return {
    sampleIndex: s.sampleIndex,
    tokenIds: [...s.tokenIds],
    promptLength: s.promptLength,
    lossMask: [...s.lossMask],
    behaviorLogprobs: [...s.behaviorLogprobs],
    policyVersions: [...s.policyVersions],
    messages: s.messages.map((m) => ({ ...m })),
  };
}

/** Tokens generated or appended after the prompt (what verl's max_response_length bounds). */
export const responseLength = (s: TokenState): number => s.tokenIds.length - s.promptLength;
