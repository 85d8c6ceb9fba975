// A minimal JSON-over-HTTP server for the built-in services (retrieval, sandbox, ToolBench cache):
// POST routes with a zod-checked body and a size limit; binds 127.0.0.1 and port 0 unless told. Every
// request must name an allowed Host and carry no Origin: a web page the user visits can reach a loopback
// port (directly, or by DNS rebinding a name of its own to 127.0.0.1), and these services run code or
// answer for the user's data; no client we serve is a browser.
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isIP } from 'node:net';

/** Returns the JSON body to send; throw an HttpError for a non-200 answer. */
export type JsonRoute = (body: unknown) => Promise<unknown> | unknown;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(typeof body === 'string' ? body : JSON.stringify(body));
  }
}

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface ServeOptions {
  host?: string;
  port?: number;
  maxBodyBytes?: number;
  /**
   * Host names clients may address the server by, besides loopback names and the bound address. With a
   * wildcard bind (0.0.0.0, ::) and none given, any Host is answered: the names of this machine are unknown.
   */
  allowedHosts?: string[];
  /** Refuse POST bodies not sent as `application/json` (a page can POST text/plain cross-site, unannounced). */
  requireJson?: boolean;
  /** When set, every request but `GET /health` needs `Authorization: Bearer <token>`. */
  token?: string;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];
const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** True when binding `host` keeps the server on this machine. */
export const isLoopbackBind = (host: string): boolean =>
  LOOPBACK_NAMES.includes(host) || (isIP(host) === 4 && host.startsWith('127.'));

/** The name part of a Host header: `[::1]:8080` -> `::1`, `Example.org:80` -> `example.org`. */
function hostName(header: string): string {
  const h = header.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(1, h.indexOf(']') === -1 ? undefined : h.indexOf(']'));
  return h.split(':')[0] ?? '';
}

/**
 * The host names a server bound to `bind` answers to: loopback names, the bound address and `extra`; null (any)
 * for a wildcard bind given no names, whose names are unknown.
 */
export function allowedHostSet(bind: string, extra: readonly string[] = []): Set<string> | null {
  if (WILDCARDS.has(bind) && extra.length === 0) return null;
  return new Set(
    [...LOOPBACK_NAMES, ...(WILDCARDS.has(bind) ? [] : [bind]), ...extra].map((h) =>
      h.toLowerCase().replace(/^\[|\]$/g, ''),
    ),
  );
}

/** Why the request's Host is refused (a DNS-rebound name, say), or null when it is one the server answers to. */
export function hostRefusal(req: IncomingMessage, allowed: Set<string> | null): string | null {
  const host = hostName(req.headers.host ?? '');
  if (allowed && !allowed.has(host))
    return `Host ${JSON.stringify(req.headers.host ?? '')} is not one this server answers to`;
  return null;
}

/** Why a request may not be served (status and message), or null. */
function refusal(
  req: IncomingMessage,
  opts: ServeOptions,
  allowed: Set<string> | null,
): [number, string] | null {
  const badHost = hostRefusal(req, allowed);
  if (badHost) return [403, badHost];
  if (req.headers.origin !== undefined)
    return [403, 'requests from web pages (with an Origin header) are refused'];
  const isHealth = req.method === 'GET' && (req.url ?? '/').split('?')[0] === '/health';
  if (opts.token !== undefined && !isHealth) {
    const given = Buffer.from((req.headers.authorization ?? '').replace(/^Bearer\s+/i, ''));
    const want = Buffer.from(opts.token);
    if (given.length !== want.length || !timingSafeEqual(given, want))
      return [401, 'missing or wrong bearer token (Authorization: Bearer <token>)'];
  }
  if (opts.requireJson && req.method === 'POST') {
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
    if (type !== 'application/json')
      return [415, `the body must be sent as application/json, not ${JSON.stringify(type ?? '')}`];
  }
  return null;
}

export async function serveJson(
  routes: Record<string, JsonRoute>,
  opts: ServeOptions = {},
): Promise<RunningServer> {
  const maxBody = opts.maxBodyBytes ?? 8 * 1024 * 1024;
  const bind = opts.host ?? '127.0.0.1';
  const allowed = allowedHostSet(bind, opts.allowedHosts);
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    const refused = refusal(req, opts, allowed);
    if (refused) {
      req.resume(); // drain the body unread
      return send(refused[0], { detail: refused[1] });
    }
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const route = routes[path];
    if (path === '/health' && req.method === 'GET') return send(200, { status: 'ok' });
    if (!route) return send(404, { detail: `no route ${path}; routes: ${Object.keys(routes).join(', ')}` });
    if (req.method !== 'POST') return send(405, { detail: `${path} takes POST` });
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req, maxBody));
    } catch (err) {
      return send(err instanceof HttpError ? err.status : 400, {
        detail: `bad request body: ${(err as Error).message}`,
      });
    }
    try {
      send(200, await route(body));
    } catch (err) {
      if (err instanceof HttpError) send(err.status, err.body);
      else send(500, { detail: (err as Error).message });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, bind, () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        reject(new HttpError(413, `body larger than ${max} bytes`));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** For the `serve` commands: prints the banner (with the URL) and runs until SIGINT/SIGTERM. */
export async function serveUntilSignal(
  server: RunningServer,
  banner: string,
  onClose?: () => Promise<void>,
): Promise<void> {
  process.stdout.write(`${banner}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await server.close();
  await onClose?.();
}
