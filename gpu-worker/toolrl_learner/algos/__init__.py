"""The RL math, model-free: advantage estimators, policy/value losses, KL estimators, loss aggregation,
rollout importance-sampling correction. Every function works on packed per-token tensors [N] with a
`seq_ids` [N] tensor naming each token's sequence, so micro-batches need no padding."""
