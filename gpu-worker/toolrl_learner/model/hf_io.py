"""Hugging Face checkpoint folders in and out: config.json + safetensors (single file or sharded with an index).

Public API:
    load_pretrained(path, dtype=torch.float32, device="cpu") -> CausalLM
    save_pretrained(model, path, dtype=None, tokenizer_from=None, max_shard_bytes=5 GB) -> None
    load_state_dict_file(path) -> dict[str, Tensor]   (the raw tensors of a folder, any dtype)
    TOKENIZER_FILES: the files copied along with a model (tokenizer, chat template, generation config)
Tied embeddings are saved as transformers saves them: only model.embed_tokens.weight.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from .config import ModelConfig
from .modeling import CausalLM, skip_init

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "generation_config.json",
)
_DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


def load_state_dict_file(path: str | Path) -> dict[str, torch.Tensor]:
    folder = Path(path)
    single, index = folder / "model.safetensors", folder / "model.safetensors.index.json"
    if single.is_file():
        return load_file(single)
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        out: dict[str, torch.Tensor] = {}
        for shard in shards:
            out.update(load_file(folder / shard))
        return out
    raise FileNotFoundError(f"{folder}: neither model.safetensors nor model.safetensors.index.json")


def load_pretrained(
    path: str | Path, dtype: torch.dtype = torch.float32, device: str | torch.device = "cpu"
) -> CausalLM:
    cfg = ModelConfig.from_file(path)
    with skip_init():  # no time goes into an init that the checkpoint overwrites
        model = CausalLM(cfg)
    tensors = load_state_dict_file(path)
    if cfg.tie_word_embeddings:
        tensors.pop("lm_head.weight", None)
    expected = {k for k in model.state_dict() if not (cfg.tie_word_embeddings and k == "lm_head.weight")}
    missing, unexpected = sorted(expected - tensors.keys()), sorted(tensors.keys() - expected)
    if missing or unexpected:
        raise ValueError(
            f"{path}: checkpoint does not match a {cfg.model_type} model of this config: "
            f"missing {missing[:5]}{'...' if len(missing) > 5 else ''}, "
            f"unexpected {unexpected[:5]}{'...' if len(unexpected) > 5 else ''}"
        )
    state = {k: v.to(dtype) for k, v in tensors.items()}
    model.load_state_dict(state, strict=False, assign=True)
    if cfg.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
    model.inv_freq = cfg.inv_freq()
    return model.to(device)


def save_pretrained(
    model: CausalLM,
    path: str | Path,
    dtype: torch.dtype | None = None,
    tokenizer_from: str | Path | None = None,
    max_shard_bytes: int = 5 * 1024**3,
) -> None:
    """Write config.json and safetensors (sharded past max_shard_bytes), plus tokenizer files from a folder."""
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    cfg: ModelConfig = model.config
    tensors = {}
    for name, t in model.state_dict().items():
        if cfg.tie_word_embeddings and name == "lm_head.weight":
            continue
        tensors[name] = t.detach().to("cpu", dtype or t.dtype).contiguous()
    # Which dtype to record: the (first) floating parameter dtype after conversion.
    saved_dtype = next(iter(tensors.values())).dtype
    _write_shards(tensors, out, max_shard_bytes)
    hf = cfg.to_hf()
    hf["dtype"] = _DTYPE_NAMES.get(saved_dtype, str(saved_dtype).removeprefix("torch."))
    (out / "config.json").write_text(json.dumps(hf, indent=2) + "\n")
    if tokenizer_from is not None:
        copy_tokenizer_files(tokenizer_from, out)


def copy_tokenizer_files(src: str | Path, dst: str | Path) -> list[str]:
    copied = []
    for name in TOKENIZER_FILES:
        f = Path(src) / name
        if f.is_file() and f.resolve() != (Path(dst) / name).resolve():
            shutil.copyfile(f, Path(dst) / name)
            copied.append(name)
    return copied


def _write_shards(tensors: dict[str, torch.Tensor], out: Path, max_shard_bytes: int) -> None:
    shards: list[dict[str, torch.Tensor]] = [{}]
    size = 0
    for name, t in tensors.items():
        nbytes = t.numel() * t.element_size()
        if shards[-1] and size + nbytes > max_shard_bytes:
            shards.append({})
            size = 0
        shards[-1][name] = t
        size += nbytes
    for stale in list(out.glob("model*.safetensors")) + [out / "model.safetensors.index.json"]:
        stale.unlink(missing_ok=True)
    if len(shards) == 1:
        save_file(shards[0], out / "model.safetensors", metadata={"format": "pt"})
        return
    weight_map = {}
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(shard, out / name, metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, name))
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    index = {"metadata": {"total_size": total}, "weight_map": weight_map}
    (out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
