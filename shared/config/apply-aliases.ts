// Rewrites a run config written with other systems' names (verl, MindSpeed-RL, the seed projects) into toolrl's,
// before the schema sees it: keys move to their toolrl paths, values spelled another way are translated, names of
// rewards, prompt types and parsers become toolrl's, and keys with no meaning here are dropped with a notice.
// The table itself is aliases.ts and, for run-config keys, key-aliases.ts.

import { CriticConfigSchema } from '#shared/schemas/config/critic';
import {
  FOREIGN_SECTIONS,
  type KeyAlias,
  PREFIX_ALIASES,
  parserFormatName,
  promptTypeName,
  REWARD_CONFIG_ALIASES,
  rewardName,
  VALUE_ALIASES,
} from './aliases.ts';
import { KEY_ALIASES } from './key-aliases.ts';
import { schemaAt } from './paths.ts';

export class AliasError extends Error {
  override name = 'AliasError';
}

export type Plain = Record<string, unknown>;

export const isPlain = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v);

const KEYS = new Map(KEY_ALIASES.map((a) => [a.from, a]));

/** Subtrees copied whole: their keys are the user's own (tool and reward configs, stages handled on their own). */
const OPAQUE = new Set(['tools', 'reward.functions', 'stages', 'model.lora', 'logging.wandb']);

/** Every path some alias starts from, and their parents: where the walk must look inside objects. */
const ALIAS_PARENTS = new Set(
  [...KEY_ALIASES.map((a) => a.from), ...PREFIX_ALIASES.map((p) => p.from.slice(0, -1))].flatMap((p) => {
    const parts = p.split('.');
    return parts.map((_, i) => parts.slice(0, i + 1).join('.'));
  }),
);

export interface Resolved {
  /** The toolrl path(s); empty when the key has no meaning here. */
  paths: string[];
  alias?: KeyAlias;
}

/** The toolrl path(s) of a dotted key as another system writes it (itself when it is not an alias). */
export function resolveKeyPath(path: string): Resolved {
  let p = path;
  for (const prefix of PREFIX_ALIASES)
    if (p.startsWith(prefix.from)) p = prefix.to + p.slice(prefix.from.length);
  const alias = KEYS.get(p) ?? KEYS.get(path);
  if (!alias) return { paths: [p] };
  const to = alias.to === null ? [] : typeof alias.to === 'string' ? [alias.to] : [...alias.to];
  return { paths: to, alias };
}

/** "async_engine (MindSpeed-RL): rollouts are always asynchronous here …; ignored". */
export const ignoredNotice = (path: string, alias: KeyAlias): string =>
  `${path} (${alias.origin}) has no meaning here and is ignored: ${alias.note ?? 'no counterpart'}`;

export function getPath(obj: Plain, path: string): unknown {
  let cur: unknown = obj;
  for (const seg of path.split('.')) {
    if (!isPlain(cur)) return undefined;
    cur = cur[seg];
  }
  return cur;
}

export function setPath(obj: Plain, path: string, value: unknown): void {
  const segs = path.split('.');
  let cur = obj;
  for (const seg of segs.slice(0, -1)) {
    if (!isPlain(cur[seg])) cur[seg] = {};
    cur = cur[seg] as Plain;
  }
  cur[segs.at(-1)!] = value;
}

export function deletePath(obj: Plain, path: string): boolean {
  const segs = path.split('.');
  const parent = getPath(obj, segs.slice(0, -1).join('.'));
  const target = segs.length === 1 ? obj : parent;
  if (!isPlain(target) || !(segs.at(-1)! in target)) return false;
  delete target[segs.at(-1)!];
  return true;
}

interface Assignment {
  path: string;
  value: unknown;
  /** The key as written, for messages. */
  source: string;
  /** Set only where nothing else sets the path (clip_ratio under clip_ratio_low/high). */
  soft: boolean;
}

export interface AliasResult {
  config: Plain;
  /** One line per key dropped for having no meaning here. */
  notices: string[];
}

/**
 * The config with every alias resolved. Two keys that land on the same setting (`data.train` and verl's
 * `data.train_files`) are an error naming both; an unknown key is left for the schema to refuse by name.
 */
export function applyConfigAliases(raw: Plain, where = ''): AliasResult {
  const assignments: Assignment[] = [];
  const notices: string[] = [];
  const foreign = new Map<string, string[]>();
  const walk = (obj: Plain, base: string) => {
    for (const [key, value] of Object.entries(obj)) {
      const path = base ? `${base}.${key}` : key;
      if (key === 'verifier_weight' && 'verifier_function' in obj) continue; // read with verifier_function
      if (key === '_target_') continue; // Hydra's instantiation plumbing
      const resolved = resolveKeyPath(path);
      const moved = resolved.alias !== undefined || resolved.paths[0] !== path;
      // toolrl's own `critic:` block (PPO's separate critic) shares verl's section name: one written in toolrl's
      // keys is the user's, taken whole; verl's block (strategy, optim, fsdp_config, ...) stays foreign below.
      if (path === 'critic' && CriticConfigSchema.safeParse(value).success) {
        assignments.push({ path, value, source: path, soft: false });
        continue;
      }
      const origin = FOREIGN_SECTIONS[path.split('.')[0]!];
      // Under a foreign prefix (rl_config.X, actor_rollout_ref.rollout.multi_turn.X) only keys toolrl has move.
      const unmatched = !resolved.alias && moved && origin !== undefined && !schemaAt(resolved.paths[0]!).ok;
      if ((!moved || unmatched) && origin !== undefined) {
        // Another system's section: walk it for the keys the table maps; the rest has no counterpart here.
        if (isPlain(value) && Object.keys(value).length > 0) walk(value, path);
        else foreign.set(origin, [...(foreign.get(origin) ?? []), `${where}${path}`]);
        continue;
      }
      if (value === null && resolved.alias) continue; // verl's null: "the default", which is toolrl's then
      if (!moved && isPlain(value) && !OPAQUE.has(path) && (ALIAS_PARENTS.has(path) || isSection(path))) {
        if (Object.keys(value).length === 0) assignments.push({ path, value, source: path, soft: false });
        else walk(value, path);
        continue;
      }
      if (resolved.alias?.from.endsWith('verifier_function')) {
        assignments.push({
          path: 'reward.functions',
          value: verifierFunctions(value, obj.verifier_weight, `${where}${path}`),
          source: path,
          soft: false,
        });
        continue;
      }
      if (resolved.paths.length === 0) {
        notices.push(ignoredNotice(`${where}${path}`, resolved.alias!));
        continue;
      }
      const converted = resolved.alias?.value ? resolved.alias.value(value) : value;
      const soft = resolved.paths.length > 1 || resolved.alias?.soft === true;
      for (const p of resolved.paths) assignments.push({ path: p, value: converted, source: path, soft });
      for (const [p, v] of Object.entries(resolved.alias?.with ?? {}))
        assignments.push({ path: p, value: v, source: path, soft: true });
    }
  };
  walk(raw, '');
  for (const [origin, paths] of foreign)
    notices.push(`${origin} settings with no counterpart here are ignored: ${paths.join(', ')}`);

  const out: Plain = {};
  const setBy = new Map<string, string>();
  for (const a of [...assignments.filter((x) => !x.soft), ...assignments.filter((x) => x.soft)]) {
    const taken = [...setBy.keys()].find(
      (k) => k === a.path || a.path.startsWith(`${k}.`) || k.startsWith(`${a.path}.`),
    );
    if (taken !== undefined) {
      if (a.soft) continue;
      throw new AliasError(
        `${where}${setBy.get(taken)} and ${where}${a.source} both set ${where}${a.path.length < taken.length ? a.path : taken} (one is another system's name for it): keep one`,
      );
    }
    setBy.set(a.path, a.source);
    setPath(out, a.path, a.value);
  }
  translateNames(out);
  if (Array.isArray(out.stages))
    out.stages = out.stages.map((s, i) => normalizeStage(s, `${where}stages[${i}].`, notices));
  return { config: out, notices };
}

/** Top-level sections and their sub-blocks whose keys the walk checks one by one. */
const isSection = (path: string): boolean =>
  [
    'model',
    'data',
    'rollout',
    'rollout.multi_turn',
    'rollout.val_kwargs',
    'reward',
    'algorithm',
    'trainer',
    'logging',
  ].includes(path);

/** MindSpeed-RL's `verifier_function: [names]` + `verifier_weight: [weights]` as reward.functions. */
function verifierFunctions(names: unknown, weights: unknown, where: string): Plain[] {
  const list = Array.isArray(names) ? names : [names];
  const w = weights === undefined ? list.map(() => 1) : Array.isArray(weights) ? weights : [weights];
  if (w.length !== list.length)
    throw new AliasError(
      `${where}: ${list.length} verifier_function(s) but ${w.length} verifier_weight(s); give one weight per function`,
    );
  return list.map((name, i) => ({ name, weight: w[i] }));
}

/** Reward, prompt-type and parser names, and values spelled another way, at their toolrl paths (in place). */
function translateNames(cfg: Plain): void {
  for (const v of VALUE_ALIASES) if (getPath(cfg, v.path) === v.from) setPath(cfg, v.path, v.to);
  const reward = cfg.reward;
  if (isPlain(reward) && Array.isArray(reward.functions))
    reward.functions = reward.functions.map((f) => (isPlain(f) ? translateReward(f) : f));
  const data = cfg.data;
  if (isPlain(data) && typeof data.prompt_type === 'string')
    data.prompt_type = promptTypeName(data.prompt_type);
  const format = getPath(cfg, 'rollout.multi_turn.tool_parser_format');
  if (typeof format === 'string')
    setPath(cfg, 'rollout.multi_turn.tool_parser_format', parserFormatName(format));
}

function translateReward(spec: Plain): Plain {
  const name = typeof spec.name === 'string' ? rewardName(spec.name) : spec.name;
  if (!isPlain(spec.config)) return { ...spec, name };
  const config: Plain = {};
  for (const [k, v] of Object.entries(spec.config)) {
    const alias = REWARD_CONFIG_ALIASES.find((a) => a.reward === name && a.from === k);
    config[alias?.to ?? k] = v;
  }
  return { ...spec, name, config };
}

function normalizeStage(stage: unknown, where: string, notices: string[]): unknown {
  if (!isPlain(stage)) return stage;
  const out: Plain = { ...stage };
  if (isPlain(stage.data)) {
    const r = applyConfigAliases({ data: stage.data }, where);
    out.data = r.config.data;
    notices.push(...r.notices);
  }
  if (isPlain(stage.overrides)) {
    const r = applyConfigAliases(stage.overrides, `${where}overrides.`);
    out.overrides = r.config;
    notices.push(...r.notices);
  }
  return out;
}
