// The page's reads of the viewer's API: JSON over GET, errors as the server words them.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError(res.status, `${path}: the server answered ${res.status} with no JSON`);
  }
  if (!res.ok)
    throw new ApiError(res.status, (body as { detail?: string }).detail ?? `${path}: ${res.status}`);
  return body as T;
}

/** A query string from the set values of `params` (empty ones left out). */
export function queryString(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== undefined && v !== '' && v !== false) q.set(k, v === true ? '1' : String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
