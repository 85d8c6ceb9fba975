"""CausalLM: the Llama / Qwen2 / Qwen3 decoder the learner trains, on packed sequences.

Module names are Hugging Face's (model.embed_tokens, model.layers.N.self_attn.{q,k,v,o}_proj,
self_attn.{q,k}_norm, mlp.{gate,up,down}_proj, input_layernorm, post_attention_layernorm, model.norm,
lm_head), so HF state dicts load as they are and peft's `target_modules` names work.

Public API:
    CausalLM(config: ModelConfig)
    forward_hidden(input_ids[T], position_ids[T], cu_seqlens[B+1], max_seqlen=None, branch=None) -> hidden[T, H]
        PACKED: B sequences concatenated, attention causal within each (no padding); with branch [T], units
        of a shared prefix and branches (train/packing.py).
    forward(input_ids[T], position_ids[T], cu_seqlens[B+1]) -> logits[T, V]   (small vocabularies, tests)
    forward_batch(input_ids[B, S]) -> logits[B, S, V]                             (unpadded equal lengths)
    lm_head_weight() -> Tensor[V, H]   (feed to logprobs.token_logprobs instead of materialising logits)
    gradient_checkpointing_enable() / gradient_checkpointing_disable() / gradient_checkpointing: bool
    attention_backend: "auto" | "varlen" | "sdpa"   (see attention.py)
Works under torch.autocast(bfloat16) with fp32 parameters: norms and RoPE compute in fp32 as HF does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .attention import attention_dtype, packed_causal_attention
from .config import ModelConfig


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # As transformers does: normalise in fp32, cast back, then scale (the product promotes to the weight dtype).
        dtype = x.dtype
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(dtype)


def rotary_cos_sin(inv_freq: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [T, D] in fp32 for integer positions [T]; the two halves repeat (HF's rotate_half convention)."""
    with torch.autocast(device_type=position_ids.device.type, enabled=False):
        freqs = position_ids.float()[:, None] * inv_freq.float()[None, :]  # [T, D/2]
        emb = torch.cat((freqs, freqs), dim=-1)  # [T, D]
        return emb.cos(), emb.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [T, H, D]; cos/sin [T, D] fp32 (a bf16 x is promoted: the rotation is computed in fp32)."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos[:, None, :] + rotated * sin[:, None, :]


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        h, d = cfg.hidden_size, cfg.head_dim
        self.q_proj = nn.Linear(h, cfg.num_attention_heads * d, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(h, cfg.num_key_value_heads * d, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(h, cfg.num_key_value_heads * d, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(cfg.num_attention_heads * d, h, bias=cfg.o_bias)
        if cfg.qk_norm:
            self.q_norm = RMSNorm(d, cfg.rms_norm_eps)
            self.k_norm = RMSNorm(d, cfg.rms_norm_eps)

    def forward(
        self,
        x: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        cu_seqlens: torch.Tensor,
        max_seqlen: int | None,
        backend: str,
        branch: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
    ) -> torch.Tensor:
        t, d = x.shape[0], self.cfg.head_dim
        q = self.q_proj(x).view(t, -1, d)  # [T, Hq, D]
        k = self.k_proj(x).view(t, -1, d)  # [T, Hkv, D]
        v = self.v_proj(x).view(t, -1, d)  # [T, Hkv, D]
        if self.cfg.qk_norm:
            q, k = self.q_norm(q), self.k_norm(k)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        # Under autocast q/k leave the rotation in fp32 and v a bf16 projection; attention takes one dtype: v's, or
        # fp32 on a CPU, where attention computes in fp32 (attention.py).
        dtype = attention_dtype(v)
        out = packed_causal_attention(
            q.to(dtype),
            k.to(dtype),
            v,
            cu_seqlens,
            max_seqlen,
            backend=backend,
            branch=branch,
            positions=positions,
        )
        return self.o_proj(out.reshape(t, -1))  # [T, H]


class MLP(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        h, i = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = nn.Linear(h, i, bias=cfg.mlp_bias)
        self.up_proj = nn.Linear(h, i, bias=cfg.mlp_bias)
        self.down_proj = nn.Linear(i, h, bias=cfg.mlp_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, x, cos, sin, cu_seqlens, max_seqlen, backend, branch=None, positions=None):
        x = x + self.self_attn(
            _autocast_input(self.input_layernorm(x)),
            cos,
            sin,
            cu_seqlens,
            max_seqlen,
            backend,
            branch,
            positions,
        )
        return x + self.mlp(_autocast_input(self.post_attention_layernorm(x)))


def _autocast_input(x: torch.Tensor) -> torch.Tensor:
    """A norm's fp32 output cast once to the autocast dtype for the projections that share it (q/k/v, gate/up):
    left to autocast, each projection casts (and keeps for its backward) a copy of its own. The same numbers."""
    dev = x.device.type
    return x.to(torch.get_autocast_dtype(dev)) if torch.is_autocast_enabled(dev) else x


class DecoderModel(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)


class CausalLM(nn.Module):
    inv_freq: torch.Tensor  # a buffer; declared so attribute access is typed as the tensor it is

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        self.model = DecoderModel(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        # Not a parameter or persistent buffer: recomputed from the config, never in a state dict.
        self.register_buffer("inv_freq", config.inv_freq(), persistent=False)
        self.gradient_checkpointing = False
        self.attention_backend = "auto"

    def gradient_checkpointing_enable(self) -> None:
        self.gradient_checkpointing = True

    def gradient_checkpointing_disable(self) -> None:
        self.gradient_checkpointing = False

    def lm_head_weight(self) -> torch.Tensor:
        return self.lm_head.weight

    def forward_hidden(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        cu_seqlens: torch.Tensor,
        max_seqlen: int | None = None,
        branch: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """input_ids, position_ids [T] (positions restart at 0 per sequence); cu_seqlens [B+1] -> hidden [T, H].
        branch [T]: units with a shared prefix (train/packing.py's MicroBatch.branch)."""
        if input_ids.dim() != 1 or position_ids.shape != input_ids.shape:
            raise ValueError(
                f"forward_hidden takes packed 1-D input_ids and position_ids of equal length, got "
                f"{tuple(input_ids.shape)} and {tuple(position_ids.shape)}"
            )
        if cu_seqlens.dim() != 1 or int(cu_seqlens[-1]) != input_ids.shape[0] or int(cu_seqlens[0]) != 0:
            raise ValueError(
                f"cu_seqlens must run from 0 to T={input_ids.shape[0]}, got {cu_seqlens.tolist()}"
            )
        x = self.model.embed_tokens(input_ids)  # [T, H]
        cos, sin = rotary_cos_sin(self.inv_freq, position_ids)  # [T, D]
        for layer in self.model.layers:
            args = (x, cos, sin, cu_seqlens, max_seqlen, self.attention_backend, branch, position_ids)
            if self.gradient_checkpointing and self.training and torch.is_grad_enabled():
                x = checkpoint(layer, *args, use_reentrant=False)
            else:
                x = layer(*args)
        return self.model.norm(x)  # [T, H]

    def forward(
        self, input_ids: torch.Tensor, position_ids: torch.Tensor, cu_seqlens: torch.Tensor
    ) -> torch.Tensor:
        """Full logits [T, V]: fine for tiny vocabularies; the learner uses lm_head_weight() + token_logprobs."""
        return self.lm_head(self.forward_hidden(input_ids, position_ids, cu_seqlens))

    def forward_batch(self, input_ids: torch.Tensor) -> torch.Tensor:
        """[B, S] sequences of equal length (no padding) -> logits [B, S, V], through the packed path."""
        b, s = input_ids.shape
        ids, pos, cu = pack([input_ids[i] for i in range(b)])
        return self.forward(ids, pos, cu).view(b, s, -1)


def pack(sequences: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Concatenate 1-D token tensors -> (input_ids[T], position_ids[T], cu_seqlens[B+1])."""
    if not sequences:
        raise ValueError("pack needs at least one sequence")
    device = sequences[0].device
    lengths = torch.tensor([len(s) for s in sequences], device=device)
    if (lengths == 0).any():
        raise ValueError("pack: empty sequence")
    cu = torch.zeros(len(sequences) + 1, dtype=torch.int32, device=device)
    cu[1:] = torch.cumsum(lengths, 0)
    pos = torch.cat([torch.arange(n, device=device) for n in lengths.tolist()])
    return torch.cat(sequences), pos, cu


def _no_init(self: nn.Module) -> None:
    pass


@contextlib.contextmanager
def skip_init() -> Iterator[None]:
    """Build modules without running their default init (for weights that are overwritten right after).

    Cheaper than constructing on the meta device, whose init ops pull in torch._dynamo (seconds of import)."""
    saved = nn.Linear.reset_parameters, nn.Embedding.reset_parameters
    nn.Linear.reset_parameters = _no_init
    nn.Embedding.reset_parameters = _no_init
    try:
        yield
    finally:
        nn.Linear.reset_parameters, nn.Embedding.reset_parameters = saved


def init_weights(model: CausalLM, seed: int, std: float = 0.02) -> None:
    """Deterministic random init as transformers does it: N(0, std) matrices, zero biases, unit norms."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            elif name.endswith(".bias"):
                p.zero_()
            else:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32) * std)
