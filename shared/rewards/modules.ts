// Custom rewards from a user module named in `reward.modules` (a .ts or .js file, path relative to the config
// file). The module exports `rewards`: an object whose keys are reward names and whose values are functions
//   (input: RewardInput, config: Record<string, unknown>) => number | {score, components?} (or a promise of one)
// or objects {score: that function, description?}. A bare number is a score with no components.
// A module is code the run's author wrote: it is imported by the reward stage only (never by `submit` or the
// run-starter), from the run's uploaded input files on a stage (docs/security.md, "Who can do what").
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { RewardInput } from './input.ts';
import type { RewardDefinition, RewardOutput } from './types.ts';

type UserScore = (input: RewardInput, config: Record<string, unknown>) => unknown;

function checkedOutput(value: unknown, name: string): RewardOutput {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`reward ${name} returned ${value}, not a finite number`);
    return { score: value, components: {} };
  }
  const o = value as { score?: unknown; components?: unknown } | null;
  if (!o || typeof o.score !== 'number' || !Number.isFinite(o.score)) {
    throw new Error(
      `reward ${name} must return a finite number or {score, components}; got ${JSON.stringify(value)?.slice(0, 200)}`,
    );
  }
  const components: Record<string, number> = {};
  for (const [k, v] of Object.entries((o.components ?? {}) as Record<string, unknown>)) {
    if (typeof v !== 'number' || !Number.isFinite(v))
      throw new Error(`reward ${name}: component ${k} is ${String(v)}, not a finite number`);
    components[k] = v;
  }
  return { score: o.score, components };
}

function userDefinition(name: string, entry: unknown, path: string): RewardDefinition {
  const fn = (typeof entry === 'function' ? entry : (entry as { score?: unknown } | null)?.score) as
    | UserScore
    | undefined;
  if (typeof fn !== 'function') {
    throw new Error(`reward module ${path}: rewards.${name} must be a function or {score: function}`);
  }
  const description = (entry as { description?: unknown }).description;
  return {
    name,
    module: path,
    description: typeof description === 'string' ? description : `custom reward from ${path}`,
    config: z.record(z.string(), z.unknown()),
    create: (config) => (input) => {
      const out = fn(input, config as Record<string, unknown>);
      return out instanceof Promise ? out.then((v) => checkedOutput(v, name)) : checkedOutput(out, name);
    },
  };
}

/** Seconds a module may take to load (top-level code), and a module reward's call by default. */
export const MODULE_REWARD_TIMEOUT_SEC = 60;

/**
 * Rejects when `work` has not settled within `sec` seconds. Only code that yields can be cut short this way: a
 * synchronous loop holds the thread until the function's own timeout (Lambda) ends the process.
 */
export function withinSeconds<T>(work: Promise<T>, sec: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${sec} s`)), sec * 1000);
  });
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}

/** Imports a reward module and returns its rewards; a missing file or a bad export throws naming the path. */
export async function loadRewardModule(path: string, baseDir: string): Promise<RewardDefinition[]> {
  const file = isAbsolute(path) ? path : resolve(baseDir, path);
  if (!existsSync(file)) throw new Error(`reward module ${path} not found (looked at ${file})`);
  const mod = (await withinSeconds(
    import(pathToFileURL(file).href),
    MODULE_REWARD_TIMEOUT_SEC,
    `reward module ${path} (its top-level code)`,
  )) as { rewards?: unknown; default?: unknown };
  const rewards = mod.rewards ?? (mod.default as { rewards?: unknown } | undefined)?.rewards ?? mod.default;
  if (typeof rewards !== 'object' || rewards === null) {
    throw new Error(`reward module ${path} exports no \`rewards\` object ({name: (input, config) => score})`);
  }
  return Object.entries(rewards).map(([name, entry]) => userDefinition(name, entry, path));
}
