// `toolrl view`'s HTTP server (node:http): the bundled page and a read-only JSON API over one run. Bound to
// 127.0.0.1 with the Host rule of the other built-in servers (shared/tools/serve.ts: a DNS-rebound name is
// refused); unlike them its client is a browser, so a request may carry an Origin, but only its own page's: a
// page of another site gets 403. Only GET and HEAD are served: nothing here changes anything.
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { allowedHostSet, hostRefusal, type RunningServer } from '#shared/tools/serve';
import { NotFound, RunDetails } from './details.ts';
import { RunView } from './run-view.ts';
import type { RunSource } from './source.ts';
import type { TrajectoryQuery } from './trajectory-index.ts';

export interface ViewServerOptions {
  /** Port to bind on 127.0.0.1; 0 picks a free one. */
  port?: number;
  /** The built page (index.html, app.js, app.css): `pageDir()` of ./page-build.ts. */
  assetsDir: string;
  /** A refresh is shared by requests within this many ms (default 1500). */
  refreshEveryMs?: number;
}

export interface ViewServer extends RunningServer {
  readonly view: RunView;
}

const ASSETS: Record<string, string> = {
  '/': 'index.html',
  '/index.html': 'index.html',
  '/app.js': 'app.js',
  '/app.css': 'app.css',
};
const TYPES: Record<string, string> = {
  html: 'text/html; charset=utf-8',
  js: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};
const SECURITY_HEADERS = {
  // Everything comes from this server: no CDN, no inline script, no frames.
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

class BadRequest extends Error {}

const num = (v: string | null, name: string): number | undefined => {
  if (v === null || v.trim() === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n)) throw new BadRequest(`${name} must be a number, not ${JSON.stringify(v)}`);
  return n;
};

/** The table's query from the URL's search parameters. */
export function trajectoryQuery(p: URLSearchParams): TrajectoryQuery {
  const split = p.get('split');
  if (split && split !== 'train' && split !== 'val') throw new BadRequest('split must be train or val');
  const sort = p.get('sort');
  if (sort && !['step', 'reward', 'version', 'group', 'toolCalls'].includes(sort))
    throw new BadRequest(`sort must be step, reward, version, group or toolCalls, not ${sort}`);
  const failed = p.get('failed');
  return {
    split: (split || undefined) as TrajectoryQuery['split'],
    step: p.get('step') ?? undefined,
    version: p.get('version') ?? undefined,
    prompt: p.get('prompt') ?? undefined,
    minReward: num(p.get('minReward'), 'minReward'),
    maxReward: num(p.get('maxReward'), 'maxReward'),
    finish: p.get('finish') || undefined,
    failed: failed === '1' ? true : failed === '0' ? false : undefined,
    groupId: p.get('group') || undefined,
    sort: (sort || undefined) as TrajectoryQuery['sort'],
    desc: p.get('desc') === '1',
    offset: num(p.get('offset'), 'offset'),
    limit: num(p.get('limit'), 'limit'),
  };
}

export async function serveRun(source: RunSource, opts: ViewServerOptions): Promise<ViewServer> {
  const view = new RunView(source);
  const details = new RunDetails(view);
  const every = opts.refreshEveryMs ?? 1500;
  let lastRefresh = 0;
  const fresh = async () => {
    if (Date.now() - lastRefresh >= every) {
      lastRefresh = Date.now();
      await view.refresh();
    }
  };
  await view.refresh();
  const allowed = allowedHostSet('127.0.0.1');

  const api = async (path: string, params: URLSearchParams): Promise<unknown> => {
    const parts = path.split('/').slice(2).map(decodeURIComponent); // /api/<a>/<b>/<c>
    const [what, a, b] = parts;
    if (what === 'run' && parts.length === 1) {
      await fresh();
      return view.info();
    }
    if (what === 'metrics') return view.metrics;
    if (what === 'evals') return view.evals;
    if (what === 'queues') return view.queues();
    if (what === 'trajectories' && a === undefined) return view.index.query(trajectoryQuery(params));
    if (what === 'trajectories' && a !== undefined && b !== undefined) {
      const i = Number(b);
      if (!Number.isInteger(i) || i < 0) throw new BadRequest(`sample index must be an integer, not ${b}`);
      return details.trajectory(a, i);
    }
    if (what === 'groups' && a !== undefined) return details.group(a);
    if (what === 'validation' && a === undefined) return details.validation();
    if (what === 'validation' && a !== undefined) return details.compare(a);
    if (what === 'dead-letters') return details.deadLetters();
    throw new NotFound(`no API route ${path}`);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, type: string, body: string | Buffer) => {
      res.writeHead(status, {
        'content-type': type,
        'content-length': Buffer.byteLength(body),
        ...SECURITY_HEADERS,
      });
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    const sendJson = (status: number, body: unknown) =>
      send(status, 'application/json', JSON.stringify(body));
    const refused = refusal(req, allowed);
    if (refused) return sendJson(403, { detail: refused });
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return sendJson(405, { detail: `${req.method} is not served: the viewer only reads` });
    const url = new URL(req.url ?? '/', 'http://viewer');
    if (url.pathname.startsWith('/api/')) {
      try {
        return sendJson(200, await api(url.pathname, url.searchParams));
      } catch (err) {
        if (err instanceof BadRequest || err instanceof RangeError || err instanceof URIError)
          return sendJson(400, { detail: err.message });
        if (err instanceof NotFound) return sendJson(404, { detail: err.message });
        return sendJson(500, { detail: (err as Error).message });
      }
    }
    const asset = ASSETS[url.pathname];
    if (!asset) return sendJson(404, { detail: `no page ${url.pathname}` });
    let body: Buffer;
    try {
      body = readFileSync(join(opts.assetsDir, asset));
    } catch {
      return sendJson(500, {
        detail: `the page is not built (${join(opts.assetsDir, asset)}): run npm run setup`,
      });
    }
    send(200, TYPES[asset.split('.').pop()!]!, body);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: (err as Error).message }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    view,
    close: () =>
      new Promise<void>((resolve) => {
        view.close();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The Host rule of the built-in servers, and an Origin only when it is this server's own (its page's fetches). */
export function refusal(req: IncomingMessage, allowed: Set<string> | null): string | null {
  const badHost = hostRefusal(req, allowed);
  if (badHost) return badHost;
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${req.headers.host}`)
    return `requests from other web pages (Origin ${JSON.stringify(origin)}) are refused`;
  return null;
}
