// Hooks the views share: the hash route, and a fetch that refetches when its URL or the run's revision changes.
import { useEffect, useState } from 'preact/hooks';
import { getJson } from './fetch.ts';

export interface Route {
  /** Path segments after `#/`, decoded. */
  readonly parts: readonly string[];
  readonly params: URLSearchParams;
}

function parseHash(hash: string): Route {
  const [path = '', query = ''] = hash.replace(/^#\/?/, '').split('?');
  return {
    parts: path
      .split('/')
      .filter((p) => p !== '')
      .map(decodeURIComponent),
    params: new URLSearchParams(query),
  };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

export const href = (parts: readonly (string | number)[], params?: URLSearchParams): string =>
  `#/${parts.map((p) => encodeURIComponent(String(p))).join('/')}${params?.size ? `?${params}` : ''}`;

export interface Fetched<T> {
  readonly data: T | undefined;
  readonly error: string | undefined;
  readonly loading: boolean;
}

/** GETs `path` (none when null), again whenever `path` or `revision` changes; keeps the last data meanwhile. */
export function useApi<T>(path: string | null, revision = ''): Fetched<T> {
  const [state, setState] = useState<Fetched<T>>({
    data: undefined,
    error: undefined,
    loading: path !== null,
  });
  useEffect(() => {
    if (path === null) return;
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    getJson<T>(path).then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (err: Error) => live && setState((s) => ({ data: s.data, error: err.message, loading: false })),
    );
    return () => {
      live = false;
    };
  }, [path, revision]);
  return state;
}
