"""PPO's separate critic, as verl trains one: its own decoder (`critic.model.path`, full or LoRA, possibly
smaller than the policy but sharing its tokenizer) with a value head, its own AdamW and learning rate, and its
own epochs and mini-batches over each batch. V(s_t) is read at the hidden state that predicts each sampled token,
the state the policy acts from. The head starts at zero, so the first advantages are the returns themselves.

Each mini-batch steps the clipped value loss (algos/value_loss.py, cliprange_value around the values the batch
was scored with). The checkpoint keeps the critic's weights in `critic/` (Hugging Face `model/` or peft's
`adapter/`, plus `value_head.safetensors`) and its optimiser beside the policy's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from ..algos.value_loss import value_loss
from ..config import LearnerConfig
from .batch import LearnerBatch
from .lora import lora_config
from .minibatch import loss_totals, micro_aggregate, mini_batches
from .optim import build_optimizer, lr_at, set_lr
from .packing import MicroBatch, pack_sequences
from .precision import autocast


class Critic:
    def __init__(
        self, cfg: LearnerConfig, model_dir: Path, device: torch.device, autocast_dtype: torch.dtype | None
    ) -> None:
        from ..model.hf_io import load_pretrained

        self.cfg = cfg
        self.model_dir = Path(model_dir)
        self.device = device
        self.autocast_dtype = autocast_dtype
        self.base = load_pretrained(self.model_dir, dtype=torch.float32, device=device)
        if cfg.critic_gradient_checkpointing:
            self.base.gradient_checkpointing_enable()
        self.peft = None
        if cfg.critic_lora_rank is not None:
            from peft import get_peft_model

            lora = lora_config(
                cfg.critic_lora_rank,
                cfg.critic_lora_alpha,
                cfg.critic_lora_dropout,
                cfg.critic_lora_target_modules,
            )
            self.peft = get_peft_model(self.base, lora)
        self.vocab_size = int(self.base.config.vocab_size)
        self.value_head = nn.Linear(self.base.config.hidden_size, 1).to(device)
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)
        self.optimizer = build_optimizer(
            self.named_trainable_parameters(), cfg.critic_lr, cfg.critic_weight_decay
        )
        self.params = [p for _, p in self.named_trainable_parameters()]
        self.step_count = 0  # critic updates done; its lr warm-up's only state

    def named_trainable_parameters(self) -> list[tuple[str, nn.Parameter]]:
        out = [(n, p) for n, p in self.base.named_parameters() if p.requires_grad]
        return out + [(f"value_head.{n}", p) for n, p in self.value_head.named_parameters()]

    # -- values ----------------------------------------------------------------------------------------

    def _autocast(self):
        return autocast(self.device, self.autocast_dtype)

    def values(self, mb: MicroBatch) -> Tensor:
        """V(state before each loss token) [n] of a micro-batch; with autograd in training mode."""
        if mb.num_tokens and int(mb.input_ids.max()) >= self.vocab_size:
            raise ValueError(
                f"token id {int(mb.input_ids.max())} is outside the critic's vocabulary ({self.vocab_size}): "
                "critic.model must share the policy's tokenizer"
            )
        with self._autocast():
            hidden = self.base.forward_hidden(
                mb.input_ids, mb.position_ids, mb.cu_seqlens, mb.max_seqlen, mb.branch
            )  # [T, H]
            h = hidden.index_select(0, mb.pred_rows)  # [n, H]
            return self.value_head(h).squeeze(-1).float()  # [n]

    @torch.no_grad()
    def old_values(self, mbs: list[MicroBatch], n_tok: int) -> Tensor:
        """V_old [N] over the whole batch, before any update (dropout off)."""
        self.base.eval()
        out = torch.zeros(n_tok, device=self.device)
        for mb in mbs:
            out[mb.token_index] = self.values(mb)
        return out

    # -- the update ------------------------------------------------------------------------------------

    def update(
        self, cfg: LearnerConfig, batch: LearnerBatch, returns: Tensor, old_values: Tensor, step: int
    ) -> dict[str, float]:
        """critic_ppo_epochs passes of shuffled mini-batches, one optimiser step each; returns the metrics."""
        epochs = cfg.critic_ppo_epochs or cfg.ppo_epochs
        per_step = cfg.critic_ppo_mini_batch_size or cfg.ppo_mini_batch_size
        clip = cfg.critic_cliprange_value if cfg.critic_cliprange_value is not None else cfg.cliprange_value
        lr = lr_at(
            self.step_count, lr=cfg.critic_lr, scheduler="constant", warmup_steps=cfg.critic_lr_warmup_steps,
            total_steps=None,
        )  # fmt: skip
        set_lr(self.optimizer, lr)
        self.base.train()
        sums = {"vf_loss": 0.0, "vf_clip_frac": 0.0, "values_mean": 0.0}
        grad_norms: list[Tensor] = []
        updates = 0
        for epoch in range(epochs):
            # A different stream than the actor's shuffle (epoch offset), equally reproducible.
            plans = mini_batches(batch, per_step, seed=cfg.seed + 7919, step=step, epoch=epoch)
            for seqs in plans:
                m_tok, m_seqs = loss_totals(batch, seqs)
                if not m_tok:
                    continue
                self.optimizer.zero_grad(set_to_none=True)
                for mb in pack_sequences(batch, seqs, cfg.micro_batch_tokens):
                    mb = mb.to(self.device)
                    idx = mb.token_index
                    values = self.values(mb)  # [n]
                    mask = torch.ones_like(values)
                    loss, m = value_loss(
                        values, old_values[idx], returns[idx], mask, micro_aggregate(cfg, mb, m_tok, m_seqs),
                        cliprange_value=clip,
                    )  # fmt: skip
                    loss.backward()
                    w = idx.shape[0] / m_tok
                    sums["vf_loss"] += float(m["vf_loss"])
                    sums["vf_clip_frac"] += float(m["vf_clip_frac"]) * w
                    sums["values_mean"] += float(m["values_mean"]) * w
                grad_norms.append(torch.nn.utils.clip_grad_norm_(self.params, cfg.critic_grad_clip).detach())
                self.optimizer.step()
                updates += 1
        self.step_count += 1
        out = {k: v / max(1, updates) for k, v in sums.items()}
        out.update(
            critic_lr=lr,
            critic_grad_norm=float(sum(grad_norms)) / len(grad_norms) if grad_norms else 0.0,
            critic_updates=float(updates),
        )
        return out

    # -- checkpoint --------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {"optimizer": self.optimizer.state_dict(), "step": self.step_count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.step_count = int(state["step"])

    def save(self, folder: Path) -> None:
        from safetensors.torch import save_file

        from ..model.hf_io import save_pretrained

        folder.mkdir(parents=True, exist_ok=True)
        if self.peft is None:
            save_pretrained(self.base, folder / "model", dtype=torch.float32, tokenizer_from=self.model_dir)
        else:
            self.peft.save_pretrained(str(folder / "adapter"))
        head = {k: v.detach().to("cpu").contiguous() for k, v in self.value_head.state_dict().items()}
        save_file(head, str(folder / "value_head.safetensors"), metadata={"format": "pt"})

    def load(self, folder: Path) -> None:
        from safetensors.torch import load_file

        from ..model.hf_io import load_state_dict_file

        if (folder / "model").is_dir():
            tensors = load_state_dict_file(folder / "model")
            with torch.no_grad():
                params = dict(self.base.named_parameters())
                for name, t in tensors.items():
                    if name in params:
                        params[name].copy_(t.to(params[name].dtype))
        adapter = folder / "adapter" / "adapter_model.safetensors"
        if adapter.is_file():
            from peft import set_peft_model_state_dict

            set_peft_model_state_dict(self.peft, load_file(str(adapter), device=str(self.device)))
        self.value_head.load_state_dict(
            load_file(str(folder / "value_head.safetensors"), device=str(self.device))
        )
