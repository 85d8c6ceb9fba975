"""A rollout bundle of a preset's shape (`tiny --preset`) with random weights, written tensor by tensor: the
whole model never exists in fp32 (Qwen2.5-3B's would take 12 GB), only the tensor being written and the
quantised ones. For benchmarks of shapes too large to build as a model folder on a small machine; the
bundle is the same as `tiny --preset` then `export` would write, up to the random values."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import torch

from ..model.modeling import CausalLM
from ..model.tiny import TinySpec, spec_config
from ..model.tokenizer import write_tokenizer_files
from .bundle import GRAPH_FILE, MANIFEST_FILE, _save_graph, _write_configs, _write_manifest
from .graph import build_standard_graph
from .graph_common import QuantSpec
from .graph_slots import SLOTS_GRAPH_FILE, build_slots_graph
from .weights import DATA_FILE, bundle_tensors, layout_hash, write_data_file


class RandomState(Mapping[str, torch.Tensor]):
    """A state dict whose tensors are made when read: N(0, std) matrices, unit norms, zero biases, each from
    a generator seeded by (seed, name), so a tensor read twice (a tied embedding) is the same both times."""

    def __init__(self, shapes: dict[str, torch.Size], seed: int, std: float) -> None:
        self.shapes, self.seed, self.std = shapes, seed, std

    def __getitem__(self, name: str) -> torch.Tensor:
        shape = self.shapes[name]
        if name.endswith("norm.weight"):
            return torch.ones(shape)
        if name.endswith(".bias"):
            return torch.zeros(shape)
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + zlib.crc32(name.encode()))
        return torch.randn(shape, generator=gen) * self.std

    def __iter__(self) -> Iterator[str]:
        return iter(self.shapes)

    def __len__(self) -> int:
        return len(self.shapes)


def export_random_bundle(
    preset: str,
    out_dir: str | Path,
    quantization: str,
    block_size: int = 32,
    accuracy_level: int = 4,
    seed: int = 0,
) -> dict:
    spec = TinySpec.from_preset(preset, seed=seed)
    cfg, tokenizer_json, max_length = spec_config(spec)
    with torch.device("meta"):
        shapes = {k: v.shape for k, v in CausalLM(cfg).state_dict().items()}
    bits = {"none": 0, "int8": 8, "int4": 4}[quantization]
    quant = QuantSpec(bits, block_size, accuracy_level) if bits else None
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST_FILE).unlink(missing_ok=True)
    state = RandomState(shapes, seed, spec.init_std)
    layout = write_data_file(bundle_tensors(state, cfg, quantization, block_size), out / DATA_FILE)
    _save_graph(build_standard_graph(cfg, quant), layout, out / GRAPH_FILE, check=True)
    _save_graph(build_slots_graph(cfg, quant), layout, out / SLOTS_GRAPH_FILE, check=True)
    write_tokenizer_files(out, tokenizer_json, max_length)
    _write_configs(out, cfg, None)
    export = {
        "variant": "standard",
        "blockSize": block_size if quant else None,
        "accuracyLevel": accuracy_level if quant else None,
        "opset": 17,
        "randomPreset": preset,
    }
    return _write_manifest(out, 0, cfg, quantization, layout_hash(layout), export)
