// A client of SandboxFusion's `/run_code` (a real deployment or `toolrl sandbox serve`).
import { fetchJson } from '../http/fetch-json.ts';
import { ToolFailure } from '../types.ts';
import { type RunCodeRequest, type RunCodeResponse, RunCodeResponseSchema } from './run-code-api.ts';

export async function runCodeRemote(
  url: string,
  req: Partial<RunCodeRequest> & { code: string },
  o: { signal?: AbortSignal; maxRetries?: number; retryBaseMs?: number; token?: string },
): Promise<RunCodeResponse> {
  const { token, ...rest } = o;
  const headers = token ? { authorization: `Bearer ${token}` } : undefined;
  const raw = await fetchJson(url, { body: { language: 'python', ...req }, headers, ...rest });
  const r = RunCodeResponseSchema.safeParse(raw);
  if (!r.success) throw new ToolFailure('http_error', 'the sandbox service answered in an unexpected shape');
  return r.data;
}
