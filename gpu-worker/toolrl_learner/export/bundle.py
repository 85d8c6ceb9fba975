"""The rollout bundle: graph, external weights, tokenizer, configs and manifest.json (see GRAPH.md).

Public API:
    export_bundle(model_dir_or_model, out_dir, version, quantization="none", graph_from=None, *,
                  tokenizer_dir=None, block_size=32, accuracy_level=4, variant="standard") -> manifest dict
        Full export: builds the graph and writes every file. With graph_from=<previous bundle> it is a
        weights-only republish (publish_weights).
    publish_weights(model, out_dir, version, graph_from) -> manifest dict
        Writes a new model.onnx.data for the previous bundle's graph, after checking that its layout hashes to
        the previous manifest's layoutHash; copies the graph, tokenizer and configs (out_dir may be graph_from).
    LayoutMismatchError: the new weights do not fit the previous graph (different shapes, dtypes or options).
manifest.json is written last, so a folder without one is incomplete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import onnx
import torch

from ..contracts import validate
from ..model.config import ModelConfig
from ..model.hf_io import TOKENIZER_FILES, copy_tokenizer_files, load_pretrained
from ..model.modeling import CausalLM
from .graph import build_standard_graph
from .graph_common import QuantSpec
from .graph_contrib import build_contrib_graph
from .graph_slots import SLOTS_GRAPH_FILE, build_slots_graph
from .weights import (
    DATA_FILE,
    bundle_tensors,
    external_initializer,
    layout_hash,
    layout_of_graph,
    write_data_file,
)

GRAPH_FILE = "model.onnx"
MANIFEST_FILE = "manifest.json"
VARIANTS = ("standard", "contrib")


class LayoutMismatchError(ValueError):
    """The weights of a republish do not have the previous bundle's layout."""


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def _resolve(model_dir_or_model: str | Path | CausalLM) -> tuple[CausalLM, Path | None]:
    if isinstance(model_dir_or_model, CausalLM):
        return model_dir_or_model, None
    path = Path(model_dir_or_model)
    return load_pretrained(path, dtype=torch.float32), path


def _state(model: CausalLM) -> dict[str, torch.Tensor]:
    return {k: v.detach() for k, v in model.state_dict().items()}


def _eos_ids(folder: Path, cfg: ModelConfig) -> list[int]:
    gen = folder / "generation_config.json"
    eos: Any = json.loads(gen.read_text()).get("eos_token_id") if gen.is_file() else None
    if eos is None:
        eos = cfg.eos_token_id
    if eos is None:
        return []
    return sorted(set(eos if isinstance(eos, list) else [eos]))


def _write_manifest(
    out: Path,
    version: int,
    cfg: ModelConfig,
    quantization: str,
    lhash: str,
    export: dict,
    known: dict[str, dict] | None = None,
) -> dict:
    """known: entries ({sha256, bytes}) of files copied unchanged from a previous version, not hashed again."""
    files = {}
    for f in sorted(out.iterdir()):
        if f.is_file() and f.name != MANIFEST_FILE and not f.name.endswith(".tmp"):
            size = f.stat().st_size
            entry = (known or {}).get(f.name)
            sha = entry["sha256"] if entry is not None and entry.get("bytes") == size else _sha256(f)
            files[f.name] = {"sha256": sha, "bytes": size}
    manifest = {
        "schemaVersion": 1,
        "version": version,
        "architecture": cfg.architecture,
        "modelType": cfg.model_type,
        "dtype": "fp32",
        "quantization": quantization,
        "layoutHash": lhash,
        "numLayers": cfg.num_hidden_layers,
        "numKeyValueHeads": cfg.num_key_value_heads,
        "headDim": cfg.head_dim,
        "vocabSize": cfg.vocab_size,
        "eosTokenIds": _eos_ids(out, cfg),
        "files": files,
        # How the graph was built; read back by publish_weights (extra keys are allowed by the schema).
        "export": export,
    }
    validate("bundle-manifest", manifest)
    tmp = out / (MANIFEST_FILE + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    os.replace(tmp, out / MANIFEST_FILE)
    return manifest


def _write_configs(out: Path, cfg: ModelConfig, source: Path | None) -> None:
    hf = cfg.to_hf()
    hf["dtype"] = "float32"
    (out / "config.json").write_text(json.dumps(hf, indent=2) + "\n")
    if source is not None:
        copy_tokenizer_files(source, out)
    if not (out / "generation_config.json").is_file():
        gen = {
            "eos_token_id": cfg.eos_token_id,
            "pad_token_id": cfg.pad_token_id,
            "bos_token_id": cfg.bos_token_id,
        }
        (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")


def export_bundle(
    model_dir_or_model: str | Path | CausalLM,
    out_dir: str | Path,
    version: int,
    quantization: str = "none",
    graph_from: str | Path | None = None,
    *,
    tokenizer_dir: str | Path | None = None,
    block_size: int = 32,
    accuracy_level: int = 4,
    variant: str = "standard",
) -> dict:
    model, source = _resolve(model_dir_or_model)
    if graph_from is not None:
        return publish_weights(model, out_dir, version, graph_from=graph_from)
    if variant not in VARIANTS:
        raise ValueError(f"unknown graph variant {variant!r}; one of {VARIANTS}")
    tok_source = Path(tokenizer_dir) if tokenizer_dir is not None else source
    if tok_source is None or not (tok_source / "tokenizer.json").is_file():
        raise ValueError("export_bundle needs tokenizer files: pass a model folder or tokenizer_dir=<folder>")
    cfg: ModelConfig = model.config
    bits = {"none": 0, "int8": 8, "int4": 4}.get(quantization)
    if bits is None:
        raise ValueError(f"quantization must be none, int8 or int4, got {quantization!r}")
    quant = QuantSpec(bits, block_size, accuracy_level) if bits else None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST_FILE).unlink(missing_ok=True)

    layout = write_data_file(bundle_tensors(_state(model), cfg, quantization, block_size), out / DATA_FILE)
    g = (build_contrib_graph if variant == "contrib" else build_standard_graph)(cfg, quant)
    _save_graph(g, layout, out / GRAPH_FILE, check=variant == "standard")
    # The engine's own graph over the same weights file: the cache stays in the engine's buffers (graph_slots.py).
    _save_graph(build_slots_graph(cfg, quant), layout, out / SLOTS_GRAPH_FILE, check=True)
    _write_configs(out, cfg, tok_source)
    export = {
        "variant": variant,
        "blockSize": block_size if quant else None,
        "accuracyLevel": accuracy_level if quant else None,
        "opset": 17,
    }
    return _write_manifest(out, version, cfg, quantization, layout_hash(layout), export)


def _save_graph(g, layout, path: Path, check: bool) -> None:
    proto = g.model("toolrl_decoder", "toolrl_learner")
    proto.graph.initializer.extend(external_initializer(e) for e in layout)
    onnx.save(proto, path)
    if check and not g.uses_ms_domain:  # the checker knows no com.microsoft schemas
        onnx.checker.check_model(str(path))


def publish_weights(model: CausalLM, out_dir: str | Path, version: int, graph_from: str | Path) -> dict:
    prev = Path(graph_from)
    prev_manifest = json.loads((prev / MANIFEST_FILE).read_text())
    cfg: ModelConfig = model.config
    prev_cfg = ModelConfig.from_file(prev)
    if prev_cfg != cfg:
        raise LayoutMismatchError(f"model config differs from the bundle at {prev}: {cfg} vs {prev_cfg}")
    quantization = prev_manifest.get("quantization", "none")
    block_size = (prev_manifest.get("export") or {}).get("blockSize") or 32
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (DATA_FILE + ".tmp")
    layout = write_data_file(bundle_tensors(_state(model), cfg, quantization, block_size), tmp)
    new_hash = layout_hash(layout)
    graph_layout = layout_of_graph(onnx.load(str(prev / GRAPH_FILE), load_external_data=False))
    if new_hash != prev_manifest["layoutHash"] or layout != graph_layout:
        tmp.unlink(missing_ok=True)
        first = next(
            (f"{a.as_list()} != {b.as_list()}" for a, b in zip(layout, graph_layout, strict=False) if a != b),
            f"{len(layout)} tensors vs {len(graph_layout)}",
        )
        raise LayoutMismatchError(
            f"new weights do not match the layout of {prev / GRAPH_FILE} "
            f"({new_hash} vs {prev_manifest['layoutHash']}); first difference: {first}"
        )
    known = {}
    if out.resolve() != prev.resolve():
        (out / MANIFEST_FILE).unlink(missing_ok=True)
        for name in (GRAPH_FILE, SLOTS_GRAPH_FILE, "config.json", *TOKENIZER_FILES):
            if (prev / name).is_file():
                _link_or_copy(prev / name, out / name)
                if name in prev_manifest.get("files", {}):
                    known[name] = prev_manifest["files"][name]
    else:
        (out / MANIFEST_FILE).unlink()
        known = {k: v for k, v in prev_manifest.get("files", {}).items() if k != DATA_FILE}
    os.replace(tmp, out / DATA_FILE)
    # Only the weights changed: the graph, config and tokenizer keep the previous manifest's digests.
    return _write_manifest(
        out, version, cfg, quantization, new_hash, prev_manifest.get("export") or {}, known=known
    )


def weights_digest(model: CausalLM, quantization: str, block_size: int, scratch: str | Path) -> str:
    """The sha256 of the weights file (`model.onnx.data`) a bundle of `model` would hold: written to a scratch
    file the way publish_weights writes it, hashed and removed. Two digests are equal only for the same weights."""
    cfg: ModelConfig = model.config
    tmp = Path(scratch) / f".digest-{os.getpid()}-{DATA_FILE}"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    try:
        write_data_file(bundle_tensors(_state(model), cfg, quantization, block_size), tmp)
        h = hashlib.sha256()
        with open(tmp, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    finally:
        tmp.unlink(missing_ok=True)


def _link_or_copy(src: Path, dst: Path) -> None:
    """A version's unchanged files as hard links to the previous version's (published files are never written
    again), or copies where the two folders are on different file systems."""
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)
