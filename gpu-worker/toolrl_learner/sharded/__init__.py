"""The sharded learner: FSDP2 (`torch.distributed.fsdp.fully_shard`) data parallelism under torchrun, on NCCL
(GPUs) or gloo (CPU, tests). Rank 0 runs the usual session and drivers; the other ranks follow its commands."""
