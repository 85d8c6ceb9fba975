// The timeouts every AWS SDK client of the product is built with (the SDK's defaults have none, so an endpoint
// that accepts connections and never answers would hang a stage). Plain options, no SDK import: the AWS adapters
// and the code_interpreter's Lambda runner both build clients from them.

/** Milliseconds. A request's time runs until the response headers arrive (an upload's body included). */
export const AWS_TIMEOUTS = {
  /** TCP (and TLS) connect. */
  connectMs: 3_000,
  /** A control-plane call (SQS, STS, Batch, one small object). */
  requestMs: 15_000,
  /** Idle socket: no byte either way for this long while a large object streams. */
  socketIdleMs: 60_000,
} as const;

/**
 * The `requestHandler` options every client gets (the SDK builds its Node handler from them). A call that needs
 * longer, a long poll or a large upload, passes its own `requestTimeout` with the call.
 */
export function httpHandlerOptions(requestMs: number = AWS_TIMEOUTS.requestMs) {
  return {
    requestHandler: {
      connectionTimeout: AWS_TIMEOUTS.connectMs,
      requestTimeout: requestMs,
      socketTimeout: AWS_TIMEOUTS.socketIdleMs,
      // Without it the SDK only logs a warning when the request timeout passes and keeps waiting.
      throwOnRequestTimeout: true,
    },
  };
}
