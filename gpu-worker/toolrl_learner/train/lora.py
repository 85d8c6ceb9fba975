"""The peft LoraConfig of a decoder trained through LoRA: the policy's (`model.lora`) and the critic's
(`critic.model.lora`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from peft import LoraConfig


def lora_config(
    rank: int,
    alpha: float | None,
    dropout: float,
    target_modules: tuple[str, ...],
    layers_to_transform: tuple[int, ...] | None = None,
) -> LoraConfig:
    """layers_to_transform: only these decoder layers get adapters (peft's name); None: all of them."""
    from peft import LoraConfig  # only LoRA runs pay for importing peft

    if alpha is None:
        raise ValueError("LoRA needs lora_alpha beside lora_rank (model.lora.alpha in a run config)")
    return LoraConfig(
        r=rank,
        # peft annotates lora_alpha as int but only divides by it (scaling = alpha / r); the run config
        # allows any positive number.
        lora_alpha=alpha,  # pyright: ignore[reportArgumentType]
        lora_dropout=dropout,
        target_modules=list(target_modules),
        layers_to_transform=list(layers_to_transform) if layers_to_transform is not None else None,
        bias="none",
    )
