"""The trainer: batches of scored groups -> packed micro-batches -> one optimiser step, plus the
state around it (optimiser and schedule, checkpoints, publishing, metrics, the session loop)."""
