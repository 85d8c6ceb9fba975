// An episode's OpenAI-compatible endpoint: an HTTP server on loopback, one per episode, on a port the system picks.
// `POST /v1/chat/completions` is served by the episode (episode.ts); `GET /v1/models` names the one model. Every
// error has OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`. Node's own http module: one route with
// a JSON body needs no framework, and nothing else listens.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentEngine, AgentEpisode } from './episode.ts';
import { ApiError } from './wire.ts';

/** A request body larger than this is refused (a long conversation is a few hundred KiB). */
const MAX_BODY_BYTES = 32 << 20;

export interface EpisodeEndpoint {
  /** What the agent passes to its client as `base_url`: `http://127.0.0.1:<port>/v1`. */
  readonly baseUrl: string;
  /** Stops listening and drops open connections; a request in flight still gets its answer from the episode. */
  close(): Promise<void>;
}

export interface EndpointOptions {
  /** Reports a request that failed inside toolrl (an engine error), besides answering it with a 500. */
  readonly onServerError?: (err: unknown) => void;
}

export async function serveEpisode(
  episode: AgentEpisode,
  engine: AgentEngine,
  opts: EndpointOptions = {},
): Promise<EpisodeEndpoint> {
  const server = createServer((req, res) => {
    void handle(episode, engine, req, res).catch((err: unknown) => {
      opts.onServerError?.(err);
      const message = err instanceof Error ? err.message : String(err);
      send(res, new ApiError(500, `the episode endpoint failed: ${message}`, 'internal_error'));
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        // An agent that never closes its client would hold the server open: busy connections get a moment to answer.
        setTimeout(() => server.closeAllConnections(), 2000).unref();
      }),
  };
}

async function handle(
  episode: AgentEpisode,
  engine: AgentEngine,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
  if (path === '/v1/chat/completions' || path === '/chat/completions') {
    if (req.method !== 'POST')
      return send(
        res,
        new ApiError(
          405,
          `${req.method} is not allowed here; POST a chat completion request`,
          'method_not_allowed',
        ),
      );
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      return send(
        res,
        err instanceof ApiError
          ? err
          : new ApiError(400, `the body is not JSON: ${(err as Error).message}`, 'invalid_json'),
      );
    }
    try {
      return send(res, 200, await episode.complete(body, engine));
    } catch (err) {
      if (err instanceof ApiError) return send(res, err);
      throw err;
    }
  }
  if ((path === '/v1/models' || path === '/models') && req.method === 'GET') {
    const model = episode.opts.model;
    return send(res, 200, {
      object: 'list',
      data: [{ id: model, object: 'model', created: 0, owned_by: 'toolrl' }],
    });
  }
  return send(
    res,
    new ApiError(
      404,
      `no route ${req.method} ${path}: this endpoint serves POST /v1/chat/completions`,
      'not_found',
    ),
  );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        reject(new ApiError(413, `the body is over ${MAX_BODY_BYTES} bytes`, 'request_too_large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number | ApiError, body?: unknown): void {
  if (res.headersSent) return;
  const [code, payload] = status instanceof ApiError ? [status.status, status.body] : [status, body];
  const text = JSON.stringify(payload);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
