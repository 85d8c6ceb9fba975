"""The two steps bench/learner/run.py times: ours (toolrl's Trainer.step) and the plain reference (padded
batch, full logits, Hugging Face's model class for the shape). Each builder returns (step, model): `step()`
runs one step and returns (first-step pg loss, mean log-prob of the sampled tokens under the weights it started
from); `model` is the module whose `.grad`s the step leaves (bench's gradient comparison)."""

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


def run_ours(args, cfg, seqs, rewards, device, weights: Path | None):
    import torch

    from toolrl_learner.config import LearnerConfig
    from toolrl_learner.model.config import ModelConfig
    from toolrl_learner.model.modeling import CausalLM, skip_init
    from toolrl_learner.train.policy import Policy
    from toolrl_learner.train.trainer import Trainer

    if weights is None:
        with torch.device(device), skip_init():
            model = CausalLM(ModelConfig.from_hf(cfg))
        init_weights(model, args.seed)
    else:
        from toolrl_learner.model.hf_io import load_pretrained

        model = load_pretrained(weights, dtype=torch.float32, device=device)
    model.attention_backend = args.attention
    lcfg = LearnerConfig(
        model_path="bench",
        dtype=args.dtype,
        lr=1e-6,
        micro_batch_tokens=args.micro_batch_tokens,
        logprob_chunk_size=args.chunk,
        rollout_is="none",
        gradient_checkpointing=args.grad_ckpt,
        filter_groups=False,
        lora_rank=args.lora_rank,
        lora_alpha=None if args.lora_rank is None else 2.0 * args.lora_rank,
    )
    policy = Policy(lcfg, Path("."), torch.device(device), base=model)
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
    # The training forward's log-probs, summed as the step runs (the bench's view of "the loss": the on-policy
    # pg_loss is -mean(advantage) whatever the model computes).
    sampled = sum(n for _, n in seqs)
    logp_sum: list[float] = []
    forward = policy.forward

    def recorded(mb, **kw):
        out = forward(mb, **kw)
        logp_sum.append(float(out.logprobs.detach().sum()))
        return out

    policy.forward = recorded  # pyright: ignore[reportAttributeAccessIssue]

    def step():
        logp_sum.clear()
        m = trainer.step(groups, 0)
        return m["pg_loss"], sum(logp_sum) / sampled

    return step, policy.base, policy.autocast_dtype


def run_reference(args, cfg, seqs, rewards, device, weights: Path | None):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if weights is None:
        hf = AutoConfig.for_model(
            cfg["model_type"], **{k: v for k, v in cfg.items() if k not in ("model_type", "architectures")}
        )
        with torch.device(device):
            model = AutoModelForCausalLM.from_config(hf, attn_implementation="sdpa", dtype=torch.float32)
        init_weights(model, args.seed)
    else:
        model = AutoModelForCausalLM.from_pretrained(weights, attn_implementation="sdpa", dtype=torch.float32)
        model.to(device)
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
        total = logp_total = 0.0
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
            logp_total += float((logp.detach() * lmask[:, 1:]).sum())
            del logits, logp, ratio, loss
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return total, logp_total / total_loss_tokens

    return step, model, None
