// Every queue message of the pipeline (one module per message type).
export * from './claim-check.ts';
export * from './group-ref.ts';
export * from './policy-event.ts';
export * from './reward-request.ts';
export * from './rollout-request.ts';
export * from './run-event.ts';
export * from './s3-event.ts';
export * from './tool-call-request.ts';
export * from './trajectory-in-flight.ts';
