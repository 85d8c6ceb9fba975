// JSON over HTTP for the tools that call services (search, SandboxFusion, ToolBench, weather, http):
// bounded response size, transient failures (network, 408/425/429/5xx) retried with backoff, every
// failure a ToolFailure the model can read.
import { HttpFailure, retryWithBackoff } from '../limits.ts';
import { ToolFailure } from '../types.ts';

export interface FetchJsonOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  maxRetries?: number;
  retryBaseMs?: number;
  /** Responses larger than this are refused (a service can stream forever). */
  maxResponseBytes?: number;
  /** Parse the body as JSON (default) or return the text. */
  as?: 'json' | 'text';
}

const TRANSIENT_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);
export const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;

export async function fetchJson(url: string, opts: FetchJsonOptions = {}): Promise<unknown> {
  return retryWithBackoff(() => attempt(url, opts), {
    maxRetries: opts.maxRetries ?? 2,
    baseDelayMs: opts.retryBaseMs ?? 200,
    maxDelayMs: 5000,
    signal: opts.signal,
  });
}

async function attempt(url: string, opts: FetchJsonOptions): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'),
      headers: {
        accept: 'application/json',
        ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...opts.headers,
      },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: opts.signal,
      redirect: 'error',
    });
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason ?? err;
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    throw new HttpFailure(
      `cannot reach ${origin(url)}: ${cause?.code ?? cause?.message ?? (err as Error).message}`,
      true,
    );
  }
  const text = await readCapped(res, opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, url, opts.signal);
  if (!res.ok) {
    const retryAfter = Number(res.headers.get('retry-after'));
    throw new HttpFailure(
      `${origin(url)} answered HTTP ${res.status}${text ? `: ${text.slice(0, 300)}` : ''}`,
      TRANSIENT_STATUS.has(res.status),
      res.status,
      Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : undefined,
    );
  }
  if (opts.as === 'text') return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolFailure('http_error', `${origin(url)} did not answer JSON: ${text.slice(0, 200)}`);
  }
}

async function readCapped(res: Response, max: number, url: string, signal?: AbortSignal): Promise<string> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > max) {
        await res.body.cancel().catch(() => {});
        throw new ToolFailure('http_error', `${origin(url)} sent more than ${max} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof ToolFailure) throw err;
    if (signal?.aborted) throw signal.reason ?? err;
    throw new HttpFailure(`${origin(url)} broke off the response: ${(err as Error).message}`, true);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Only scheme://host:port goes into messages the model reads (paths may carry keys). */
function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the service';
  }
}
