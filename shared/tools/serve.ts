// A minimal JSON-over-HTTP server for the built-in services (retrieval, sandbox, ToolBench cache):
// POST routes with a zod-checked body and a size limit; binds 127.0.0.1 and port 0 unless told.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

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
}

export async function serveJson(
  routes: Record<string, JsonRoute>,
  opts: ServeOptions = {},
): Promise<RunningServer> {
  const maxBody = opts.maxBodyBytes ?? 8 * 1024 * 1024;
  const server: Server = createServer(async (req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
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
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
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
