// Multi-turn episode logic: pure functions over a JSON state (see episode.ts for the lifecycle and limits).

export { renderToolResult } from '#shared/tools/render';
export {
  appendedTokens,
  episodeOutcome,
  failEpisode,
  onAssistantTurn,
  onToolResults,
  responseBudget,
  type StartOptions,
  startEpisode,
  type TimedToolResult,
} from './episode.ts';
export {
  type AssistantTurn,
  type Decision,
  type EpisodeState,
  EpisodeStateSchema,
  type Next,
  type PendingTurn,
  type PlannedCall,
  type RejectedCall,
} from './state.ts';
export { parseErrorMessage, toolMessage } from './tool-messages.ts';
export {
  ADDITIONAL_FUNCTIONS_PROMPT,
  episodeRowTools,
  heldOutTools,
  toolsAtTurn,
  userTurnOf,
  userTurnsOf,
} from './user-turns.ts';
