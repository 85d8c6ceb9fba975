// Rewards: the registry of reward kinds, building a run's weighted combination, and the input they read.
export {
  AnswerFormatSchema,
  answerTag,
  equationValue,
  extractAnswer,
  finalAnswerLine,
  goldAnswers,
  lastBoxed,
} from './answer.ts';
export { type BuildOptions, buildReward, createReward, rewardRegistry } from './build.ts';
export {
  normaliseRewardInput,
  type RewardContext,
  type RewardInput,
  type RewardInputFile,
  RewardInputFileSchema,
  type RewardTurn,
  rewardInputFromTrajectory,
  type ScoredCall,
} from './input.ts';
export { mathAnswersEqual, normaliseMathAnswer, parseMathNumber } from './math-answer.ts';
export { loadRewardModule } from './modules.ts';
export { BUILTIN_REWARDS, RewardRegistry } from './registry.ts';
export { normaliseText } from './text.ts';
export {
  defineReward,
  type RewardDefinition,
  type RewardFn,
  type RewardOutput,
  type ScoreFn,
} from './types.ts';
