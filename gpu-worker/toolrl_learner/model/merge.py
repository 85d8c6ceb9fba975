"""A LoRA checkpoint's adapter merged into its base model, as a Hugging Face folder the exporter takes: what
`toolrl eval` and `toolrl generate` need to sample from `checkpoints/step-<S>/` of a LoRA run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def merged_folder(adapter_dir: str | Path, base: str | None, out: Path) -> Path:
    """Write base + adapter (merged, fp32) with the base's tokenizer files into `out`; returns it. `base`: a model
    folder or anything model.path takes; None reads the adapter's base_model_name_or_path."""
    import torch
    from peft import LoraConfig, get_peft_model, set_peft_model_state_dict
    from safetensors.torch import load_file

    from ..train.policy import resolve_model_dir
    from .hf_io import load_pretrained, save_pretrained

    adapter = Path(adapter_dir)
    config_path = adapter / "adapter_config.json"
    if not config_path.is_file():
        raise FileNotFoundError(f"{adapter}: no adapter_config.json (a peft LoRA adapter folder)")
    name = base or json.loads(config_path.read_text()).get("base_model_name_or_path")
    if not name:
        raise ValueError(f"{config_path}: no base_model_name_or_path; give the base model with --model")
    base_dir = resolve_model_dir(str(name), out.parent / ".base")
    model = load_pretrained(base_dir, dtype=torch.float32)
    lora = LoraConfig.from_pretrained(str(adapter))
    lora.task_type = (
        None  # our decoder is not a transformers model: peft's plain wrapper, as the learner uses
    )
    peft = get_peft_model(model, lora)
    result = set_peft_model_state_dict(peft, load_file(adapter / "adapter_model.safetensors"))
    if getattr(result, "unexpected_keys", None):
        raise ValueError(f"{adapter}: adapter tensors do not fit {base_dir}: {result.unexpected_keys[:5]}")
    merged = peft.merge_and_unload()
    if out.exists():
        shutil.rmtree(out)
    save_pretrained(merged, out, tokenizer_from=base_dir)  # pyright: ignore[reportArgumentType]
    return out
