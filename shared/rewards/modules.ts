// Custom rewards from a user module named in `reward.modules` (a .ts or .js file, path relative to the config
// file). The module exports `rewards`: an object whose keys are reward names and whose values are functions
//   (input: RewardInput, config: Record<string, unknown>) => number | {score, components?} (or a promise of one)
// or objects {score: that function, description?}. A bare number is a score with no components.
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
    description: typeof description === 'string' ? description : `custom reward from ${path}`,
    config: z.record(z.string(), z.unknown()),
    create: (config) => (input) => {
      const out = fn(input, config as Record<string, unknown>);
      return out instanceof Promise ? out.then((v) => checkedOutput(v, name)) : checkedOutput(out, name);
    },
  };
}

/** Imports a reward module and returns its rewards; a missing file or a bad export throws naming the path. */
export async function loadRewardModule(path: string, baseDir: string): Promise<RewardDefinition[]> {
  const file = isAbsolute(path) ? path : resolve(baseDir, path);
  if (!existsSync(file)) throw new Error(`reward module ${path} not found (looked at ${file})`);
  const mod = (await import(pathToFileURL(file).href)) as { rewards?: unknown; default?: unknown };
  const rewards = mod.rewards ?? (mod.default as { rewards?: unknown } | undefined)?.rewards ?? mod.default;
  if (typeof rewards !== 'object' || rewards === null) {
    throw new Error(`reward module ${path} exports no \`rewards\` object ({name: (input, config) => score})`);
  }
  return Object.entries(rewards).map(([name, entry]) => userDefinition(name, entry, path));
}
