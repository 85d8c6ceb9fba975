"""The two steps bench/learner/run.py times: ours (toolrl's Trainer.step) and the plain reference (padded
batch, full logits, Hugging Face Qwen2ForCausalLM). Each builder returns a `step() -> first-step loss`."""

from __future__ import annotations

from pathlib import Path


def init_weights(model, seed: int) -> None:
    """The same weights in both models (their parameter names are the same): N(0, 0.02), unit norms, zero biases."""
    import torch

    with torch.no_grad():
        for i, (name, p) in enumerate(sorted(model.named_parameters())):
            gen = torch.Generator(device=p.device).manual_seed(seed * 100_003 + i)
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.normal_(0.0, 0.02, generator=gen)


def run_ours(args, cfg, seqs, rewards, device):
    import torch

    from toolrl_learner.config import LearnerConfig
    from toolrl_learner.model.config import ModelConfig
    from toolrl_learner.model.modeling import CausalLM
    from toolrl_learner.train.policy import Policy
    from toolrl_learner.train.trainer import Trainer

    mcfg = ModelConfig.from_hf(cfg)
    with torch.device(device):
        model = CausalLM(mcfg)
    init_weights(model, args.seed)
    model.attention_backend = args.attention
    lcfg = LearnerConfig(
        model_path="bench",
        dtype="bf16",
        lr=1e-6,
        micro_batch_tokens=args.micro_batch_tokens,
        logprob_chunk_size=args.chunk,
        rollout_is="none",
        gradient_checkpointing=args.grad_ckpt,
        filter_groups=False,
    )
    policy = Policy(lcfg, Path("."), torch.device(device), base=model)
    if args.grad_ckpt:
        model.gradient_checkpointing_enable()
    trainer = Trainer(lcfg, policy)
    groups = []
    g = args.group_size
    for k in range(0, len(seqs), g):
        trajs = []
        for (ids, n_resp), r in zip(seqs[k : k + g], rewards[k : k + g], strict=True):
            mask = [0] * (len(ids) - n_resp) + [1] * n_resp
            trajs.append(
                {
                    "tokenIds": ids,
                    "lossMask": mask,
                    "behaviorLogprobs": [0.0] * len(ids),
                    "policyVersions": [0] * len(ids),
                    "reward": r,
                    "turns": [],
                }
            )
        groups.append({"groupId": f"g{k}", "trajectories": trajs})

    def step():
        m = trainer.step(groups, 0)
        return m["pg_loss"]

    return step


def run_reference(args, cfg, seqs, rewards, device):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    hf = Qwen2Config(
        **{k: v for k, v in cfg.items() if k not in ("model_type", "architectures")},
        attn_implementation="sdpa",
    )
    with torch.device(device):
        model = Qwen2ForCausalLM(hf)
    init_weights(model, args.seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=device.startswith("cuda") or None)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else None
    # GRPO advantages per group: (r - mean) / (std + eps), the same as ours
    g = args.group_size
    adv = []
    for k in range(0, len(rewards), g):
        r = torch.tensor(rewards[k : k + g])
        adv += ((r - r.mean()) / (r.std() + 1e-6)).tolist()
    total_loss_tokens = sum(n for _, n in seqs)
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i][0]))  # length-sorted: the least padding

    def step():
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for k in range(0, len(order), args.ref_micro_seqs):
            idx = order[k : k + args.ref_micro_seqs]
            width = max(len(seqs[i][0]) for i in idx)
            ids = torch.zeros(len(idx), width, dtype=torch.long)
            attn = torch.zeros(len(idx), width, dtype=torch.long)
            lmask = torch.zeros(len(idx), width)
            for row, i in enumerate(idx):
                toks, n_resp = seqs[i]
                ids[row, : len(toks)] = torch.tensor(toks)
                attn[row, : len(toks)] = 1
                lmask[row, len(toks) - n_resp : len(toks)] = 1
            ids, attn, lmask = ids.to(device), attn.to(device), lmask.to(device)
            a = torch.tensor([adv[i] for i in idx], device=device)
            ctx = autocast if autocast is not None else torch.enable_grad()
            with ctx:
                logits = model(input_ids=ids, attention_mask=attn).logits  # [B, L, V]
            logp = torch.log_softmax(logits.float(), dim=-1)[:, :-1].gather(-1, ids[:, 1:, None]).squeeze(-1)
            ratio = torch.exp(logp - logp.detach())  # on-policy: 1, with the policy gradient
            loss = -(a[:, None] * ratio * lmask[:, 1:]).sum() / total_loss_tokens
            loss.backward()
            total += float(loss)
            del logits, logp, ratio, loss
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return total

    return step
