// Adds BFCL's reward to the built-in rewards (rewards/ cannot import the slice above it), loading only the reward's
// own modules, as rewards/registry.ts did when it named the reward itself.
import { registerBuiltinReward } from '#shared/rewards/registry';
import { bfclReward } from './reward.ts';

registerBuiltinReward(bfclReward);
