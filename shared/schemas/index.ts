// Every message and file format, in one place. JSON Schema is generated from these for the learner.
export * from './chat.ts';
export * from './config/algorithm.ts';
export * from './config/data.ts';
export * from './config/model.ts';
export * from './config/reward.ts';
export * from './config/rollout.ts';
export * from './config/run.ts';
export * from './config/tools.ts';
export * from './config/trainer.ts';
export * from './dataset-row.ts';
export * from './dead-letter.ts';
export * from './policy.ts';
export * from './scored-group.ts';
export * from './tool-result.ts';
export * from './trajectory.ts';
