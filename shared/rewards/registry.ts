// The reward kinds known by name: the built-ins, plus those a run's `reward.modules` add (see modules.ts).

import { exactMatchReward } from './builtin/exact-match.ts';
import { formatReward } from './builtin/format.ts';
import { retoolReward } from './builtin/retool.ts';
import { toolRewardReward } from './builtin/tool-reward.ts';
import { toolbenchReward } from './builtin/toolbench.ts';
import { toolcallReward } from './builtin/toolcall.ts';
import type { RewardDefinition } from './types.ts';

const builtins: RewardDefinition[] = [
  formatReward,
  toolcallReward,
  retoolReward,
  toolbenchReward,
  exactMatchReward,
  toolRewardReward,
];
export const BUILTIN_REWARDS: readonly RewardDefinition[] = builtins;

/**
 * Adds a reward that lives above rewards/ (the BFCL slice, shared/bfcl/register.ts) to the built-ins; a second call
 * with the same definition is a no-op.
 */
export function registerBuiltinReward(def: RewardDefinition): void {
  if (!builtins.includes(def)) builtins.push(def);
}

/**
 * A set of reward kinds. Each run builds its own from the built-ins and its modules, so one run's custom
 * rewards never leak into another run in the same process.
 */
export class RewardRegistry {
  private readonly defs = new Map<string, RewardDefinition>();

  constructor(defs: readonly RewardDefinition[] = BUILTIN_REWARDS) {
    for (const d of defs) this.register(d, 'built-in');
  }

  /** A second reward with a taken name is an error naming where each came from. */
  register(def: RewardDefinition, source: string): void {
    if (this.defs.has(def.name))
      throw new Error(`reward ${JSON.stringify(def.name)} from ${source} is already registered`);
    this.defs.set(def.name, def);
  }

  names(): string[] {
    return [...this.defs.keys()].sort();
  }

  list(): RewardDefinition[] {
    return this.names().map((n) => this.defs.get(n)!);
  }

  /** By toolrl's name (another system's, `retool_reward`, is translated when the config is read: shared/config). */
  get(name: string): RewardDefinition {
    const def = this.defs.get(name);
    if (!def) throw new Error(`unknown reward ${JSON.stringify(name)}; known: ${this.names().join(', ')}`);
    return def;
  }
}
