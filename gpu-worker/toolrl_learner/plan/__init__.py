"""Fit before you pay: whether the learner fits its GPUs, from the model's shape and the run config."""
