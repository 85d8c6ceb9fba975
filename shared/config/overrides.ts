// Command-line overrides in Hydra's style: `trainer.lr=1e-6 rollout.n=5 algorithm.adv_estimator=grpo`, also
// `+key=value` (add) / `++key=value` (add or replace) and `~key` (remove). A path may be written the way verl or
// MindSpeed-RL name it (see apply-aliases.ts); it must exist in the run-config schema (an unknown key is refused
// by name, with the keys that do exist there), and the value is read as YAML, then kept a string where the schema
// wants one (`name=2024` is the name "2024").
import { parse as parseYaml } from 'yaml';
import { FOREIGN_SECTIONS } from './aliases.ts';
import {
  AliasError,
  deletePath,
  ignoredNotice,
  isPlain,
  type Plain,
  resolveKeyPath,
  setPath,
} from './apply-aliases.ts';
import { schemaAt, wantsString } from './paths.ts';

export class OverrideError extends AliasError {
  override name = 'OverrideError';
}

const closest = (word: string, options: string[]): string | undefined => {
  const dist = (a: string, b: string) => {
    const dp = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
    for (let j = 1; j <= b.length; j++) dp[0]![j] = j;
    for (let i = 1; i <= a.length; i++)
      for (let j = 1; j <= b.length; j++)
        dp[i]![j] = Math.min(
          dp[i - 1]![j]! + 1,
          dp[i]![j - 1]! + 1,
          dp[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
        );
    return dp[a.length]![b.length]!;
  };
  const best = options.map((o) => [o, dist(word, o)] as const).sort((x, y) => x[1] - y[1])[0];
  return best && best[1] <= Math.max(2, Math.floor(word.length / 3)) ? best[0] : undefined;
};

export interface Override {
  /** As written on the command line. */
  text: string;
  kind: 'set' | 'delete';
  /** toolrl path(s); empty for a key with no meaning here. */
  paths: string[];
  value?: unknown;
  /** Why a key with no meaning here is ignored. */
  notice?: string;
}

/** Parses `key=value`, `+key=value`, `++key=value`, `~key` (`~key=value` too, as Hydra allows). */
export function parseOverride(text: string): Override {
  const m = /^(~|\+\+|\+)?([A-Za-z_][\w.]*)(?:=(.*))?$/s.exec(text);
  if (!m)
    throw new OverrideError(
      `override ${JSON.stringify(text)} is not key=value (e.g. trainer.lr=1e-6, rollout.n=5, ~trainer.max_steps)`,
    );
  const [, prefix, key, rawValue] = m;
  if (prefix !== '~' && rawValue === undefined)
    throw new OverrideError(`override ${text} has no value: write ${key}=VALUE (or ~${key} to remove it)`);
  const resolved = resolveKeyPath(key!);
  const origin = FOREIGN_SECTIONS[key!.split('.')[0]!];
  for (const p of resolved.paths) {
    const found = schemaAt(p);
    if (!found.ok && origin !== undefined)
      return {
        text,
        kind: 'set',
        paths: [],
        notice: `${key} (${origin}) has no counterpart here and is ignored`,
      };
    if (!found.ok) {
      const where = found.at || 'the top level';
      const wrong = p.slice(found.at ? found.at.length + 1 : 0).split('.')[0]!;
      const hint = closest(wrong, found.known);
      throw new OverrideError(
        `override ${text}: unknown key ${p}${hint ? ` (did you mean ${found.at ? `${found.at}.` : ''}${hint}?)` : ''}; ${where} has ${found.known.join(', ') || 'no keys'}`,
      );
    }
  }
  if (prefix === '~') return { text, kind: 'delete', paths: resolved.paths };
  if (resolved.paths.length === 0)
    return { text, kind: 'set', paths: [], notice: ignoredNotice(key!, resolved.alias!) };
  let value: unknown;
  try {
    value = rawValue === '' ? '' : parseYaml(rawValue!);
  } catch (err) {
    throw new OverrideError(`override ${text}: the value is not valid YAML: ${(err as Error).message}`);
  }
  const leaf = resolved.paths.length ? schemaAt(resolved.paths[0]!) : null;
  if (
    leaf?.ok &&
    wantsString(leaf.leaf) &&
    value !== null &&
    typeof value !== 'string' &&
    !isPlain(value) &&
    !Array.isArray(value)
  )
    value = rawValue;
  if (resolved.alias?.value) value = resolved.alias.value(value);
  return { text, kind: 'set', paths: resolved.paths, value };
}

export interface OverrideResult {
  config: Plain;
  notices: string[];
}

/** Applies overrides, in order, to an alias-resolved config (a copy; the input is not changed). */
export function applyOverrides(config: Plain, overrides: readonly string[]): OverrideResult {
  const out = structuredClone(config);
  const notices: string[] = [];
  for (const text of overrides) {
    const o = parseOverride(text);
    if (o.paths.length === 0) {
      if (o.notice) notices.push(o.notice);
      continue;
    }
    for (const p of o.paths) {
      if (o.kind === 'delete') deletePath(out, p);
      else setPath(out, p, o.value);
    }
  }
  return { config: out, notices };
}
