"""Per-token log-probs (and entropy) from final hidden states without materialising [T, V] logits.

With Qwen's ~152k vocabulary, full fp32 logits for 8k tokens are 4.9 GB (and as much again for their
gradient). token_logprobs walks T in chunks: each chunk's logits exist only inside the chunk, and the backward
pass recomputes them instead of saving them, so memory is O(chunk_size x V) whatever T is. Where the [T, V]
log-softmax fits in `save_bytes` (a small model on a CPU, where the step is compute-bound and the recompute is
a second logits matmul for nothing) the forward keeps it for the backward instead.

Public API:
    token_logprobs(hidden[T, H], weight[V, H], targets[T], temperature=1.0, chunk_size=1024,
                   return_entropy=False, save_bytes=SAVE_BYTES) -> (logprobs[T], entropy[T] | None)
        logprobs[t] = log softmax(hidden[t] @ weight.T / temperature)[targets[t]]  (fp32)
        entropy[t]  = -sum_v p_v log p_v of the same distribution                  (fp32)
        Differentiable w.r.t. hidden and weight. Under torch.autocast the logits matmul runs in the autocast
        dtype (as an lm_head Linear would) and the softmax in fp32.
"""

from __future__ import annotations

import torch


def _compute_dtype(hidden: torch.Tensor) -> torch.dtype:
    dev = hidden.device.type
    if torch.is_autocast_enabled(dev):
        return torch.get_autocast_dtype(dev)
    return hidden.dtype


def _chunk_stats(h: torch.Tensor, w: torch.Tensor, tgt: torch.Tensor, temperature: float):
    # Softmax in fp32 at least (bf16/fp16 logits are upcast; fp64 stays fp64 for gradcheck).
    z = (h @ w.T).to(torch.promote_types(h.dtype, torch.float32))  # [C, V], a buffer of its own
    if temperature != 1.0:
        z.div_(temperature)  # in place: a second [C, V] for nothing otherwise (x / 1 is x: skipped)
    lse = torch.logsumexp(z, dim=-1)  # [C]
    logp_tgt = z.gather(1, tgt[:, None]).squeeze(1) - lse  # [C]
    return z, lse, logp_tgt


# Largest [T, V] log-softmax the forward keeps for the backward instead of recomputing it there (256 MiB of fp32).
SAVE_BYTES = 256 * 2**20


class _ChunkedLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, hidden, weight, targets, temperature, chunk_size, with_entropy, dtype, save_bytes):
        h_all, w = hidden.to(dtype), weight.to(dtype)
        t = hidden.shape[0]
        acc = torch.promote_types(dtype, torch.float32)
        logp = torch.empty(t, dtype=acc, device=hidden.device)
        ent = torch.empty(t, dtype=acc, device=hidden.device) if with_entropy else None
        grad = ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
        keep = grad and t * weight.shape[0] * acc.itemsize <= save_bytes
        kept = []
        with torch.autocast(hidden.device.type, enabled=False):
            for s in range(0, t, chunk_size):
                e = min(s + chunk_size, t)
                z, lse, logp[s:e] = _chunk_stats(h_all[s:e], w, targets[s:e], temperature)
                if ent is not None:
                    p = torch.softmax(z, dim=-1)
                    ent[s:e] = lse - (p * z).sum(-1)  # H = lse - sum_v p_v z_v
                if keep:
                    kept.append(z.sub_(lse[:, None]))  # log p, in z's memory: [C, V]
        ctx.save_for_backward(hidden, weight, targets)
        ctx.kept = kept if keep else None
        # An output that no loss uses gets a None gradient instead of zeros: with entropy_coeff = 0 the
        # entropy is returned for the metrics only, and its gradient pass (a [C, V] product per chunk) is skipped.
        ctx.set_materialize_grads(False)
        ctx.temperature, ctx.chunk_size, ctx.with_entropy, ctx.dtype = (
            temperature,
            chunk_size,
            with_entropy,
            dtype,
        )
        return (logp, ent) if with_entropy else (logp, torch.empty(0, device=hidden.device))

    @staticmethod
    def backward(ctx, *grad_outputs):
        grad_logp, grad_ent = grad_outputs
        hidden, weight, targets = ctx.saved_tensors
        if not ctx.with_entropy:
            grad_ent = None  # the placeholder output
        if grad_logp is None and grad_ent is None:
            return (None,) * 8
        tau, dtype = ctx.temperature, ctx.dtype
        kept, ctx.kept = ctx.kept, None
        h_all, w = hidden.to(dtype), weight.to(dtype)
        acc = torch.promote_types(dtype, torch.float32)
        grad_h = torch.zeros_like(hidden, dtype=acc) if ctx.needs_input_grad[0] else None
        grad_w = torch.zeros_like(weight, dtype=acc) if ctx.needs_input_grad[1] else None
        with torch.autocast(hidden.device.type, enabled=False):
            for i, s in enumerate(range(0, hidden.shape[0], ctx.chunk_size)):
                e = min(s + ctx.chunk_size, hidden.shape[0])
                if kept is not None:
                    # [C, V], from the forward: this chunk's own now (freed with it, not at the end)
                    logp_all, kept[i] = kept[i], None
                else:
                    z, lse, _ = _chunk_stats(h_all[s:e], w, targets[s:e], tau)
                    logp_all = z.sub_(lse[:, None])
                if grad_ent is None and grad_logp is not None:
                    # Only the log-probs' gradient: p, then dL/dz, in log p's memory (one [C, V] buffer, not three;
                    # the same numbers: p * -g is -p * g)
                    gz = logp_all.exp_().mul_(-grad_logp[s:e, None])
                    gz.scatter_add_(1, targets[s:e, None], grad_logp[s:e, None])
                else:
                    p = logp_all.exp()  # [C, V]
                    if grad_logp is not None:
                        # d logp[target] / dz = onehot(target) - p
                        gz = -p * grad_logp[s:e, None]  # [C, V] dL/dz
                        gz.scatter_add_(1, targets[s:e, None], grad_logp[s:e, None])
                    else:
                        gz = torch.zeros_like(p)
                    if grad_ent is not None:
                        # H = -sum p log p  ->  dH/dz_j = -p_j (log p_j + H)
                        ent = -(p * logp_all).sum(-1, keepdim=True)
                        gz -= grad_ent[s:e, None] * p * (logp_all + ent)
                    del p
                del logp_all
                if tau != 1.0:
                    gz.div_(tau)  # z = logits / tau (x / 1 is x: skipped)
                gz = gz.to(dtype)
                if grad_h is not None:
                    grad_h[s:e] = gz @ w
                if grad_w is not None:
                    grad_w += gz.T @ h_all[s:e]
        return (
            grad_h.to(hidden.dtype) if grad_h is not None else None,
            grad_w.to(weight.dtype) if grad_w is not None else None,
            None,
            None,
            None,
            None,
            None,
            None,
        )


def token_logprobs(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    targets: torch.Tensor,
    temperature: float = 1.0,
    chunk_size: int = 1024,
    return_entropy: bool = False,
    save_bytes: int = SAVE_BYTES,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    if hidden.dim() != 2 or weight.dim() != 2 or hidden.shape[1] != weight.shape[1]:
        raise ValueError(
            f"hidden [T, H] and weight [V, H] expected, got {tuple(hidden.shape)}, {tuple(weight.shape)}"
        )
    if targets.shape != hidden.shape[:1]:
        raise ValueError(f"targets must be [T]={hidden.shape[0]}, got {tuple(targets.shape)}")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if chunk_size <= 0:
        raise ValueError(f"chunk_size must be > 0, got {chunk_size}")
    logp, ent = _ChunkedLogprobs.apply(
        hidden,
        weight,
        targets.long(),
        float(temperature),
        int(chunk_size),
        bool(return_entropy),
        _compute_dtype(hidden),
        int(save_bytes),
    )
    return logp, (ent if return_entropy else None)
