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
 * Sockets per client (each of the http and https pools). The SDK's connection timeout starts when a request asks
 * the pool for a socket, not when the socket starts to connect, so a request queued behind a full pool fails with
 * "the request socket did not establish a connection ... within the configured timeout" although nothing is wrong
 * with the network: with the SDK's default of 50, the LocalStack worker's long polls and its 256 concurrent
 * rollouts' sends and puts on one client did exactly that. The pool is sized above what one process has in flight
 * (the local worker: a few long polls per stage plus one call per concurrent record; a Lambda invocation: one or
 * two per record of its batch), so the connection timeout times the TCP connect only. Idle sockets are kept alive
 * and reused; none is opened before it is needed.
 */
export const AWS_MAX_SOCKETS = 512;

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
      httpAgent: { maxSockets: AWS_MAX_SOCKETS },
      httpsAgent: { maxSockets: AWS_MAX_SOCKETS },
    },
  };
}
