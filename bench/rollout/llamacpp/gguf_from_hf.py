"""A Hugging Face Qwen2 folder as a GGUF file for llama.cpp, written with llama.cpp's own `gguf` package.

bench/rollout gives llama.cpp the same random weights the engine's bundles are exported from. Qwen2 needs no
reordering of its projections (llama.cpp runs it with NeoX rope, as Hugging Face does), so every tensor is renamed
by gguf's own name map and written as it is, the 2-D matrices quantised by gguf's port of llama.cpp's reference
quantisers (Q4_0: blocks of 32, one fp16 scale; Q8_0 likewise with 8-bit codes). Norms and biases stay f32, and the
embedding (tied: also the output projection) is quantised like every other matrix ("pure", as
`llama-quantize --pure` writes), so the weights a decode step reads are the same set the engine's int4/int8
bundles quantise.

usage: python gguf_from_hf.py MODEL_DIR OUT.gguf --type f32|f16|q8_0|q4_0
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import gguf
import numpy as np

TYPES = {
    "f32": (gguf.GGMLQuantizationType.F32, gguf.LlamaFileType.ALL_F32),
    "f16": (gguf.GGMLQuantizationType.F16, gguf.LlamaFileType.MOSTLY_F16),
    "q8_0": (gguf.GGMLQuantizationType.Q8_0, gguf.LlamaFileType.MOSTLY_Q8_0),
    "q4_0": (gguf.GGMLQuantizationType.Q4_0, gguf.LlamaFileType.MOSTLY_Q4_0),
}


def read_config(model_dir: Path) -> dict:
    cfg = json.loads((model_dir / "config.json").read_text())
    if cfg.get("model_type") != "qwen2":
        raise SystemExit(
            f"{model_dir}/config.json: model_type {cfg.get('model_type')!r}, only qwen2 is supported"
        )
    return cfg


def tensors(model_dir: Path):
    """(name, fp32 array) for every tensor of the folder's safetensors files, in file order.

    Read from the file's own layout (an 8-byte header size, a JSON header, raw little-endian data) because numpy has
    no bfloat16, the dtype the presets' folders are saved in: bf16 becomes fp32 exactly (its bits are fp32's top 16).
    """
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise SystemExit(f"{model_dir}: no .safetensors files")
    plain = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
    for f in files:
        raw = np.memmap(f, dtype=np.uint8, mode="r")
        n = int(raw[:8].view(np.uint64)[0])
        header = json.loads(bytes(raw[8 : 8 + n]))
        header.pop("__metadata__", None)
        for name, info in header.items():
            start, end = (8 + n + o for o in info["data_offsets"])
            buf = raw[start:end]
            if info["dtype"] == "BF16":
                data = (buf.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
            elif info["dtype"] in plain:
                data = buf.view(plain[info["dtype"]]).astype(np.float32)
            else:
                raise SystemExit(f"{f.name}: {name} is {info['dtype']}, not a float type")
            yield name, data.reshape(info["shape"])


def vocabulary(model_dir: Path, vocab_size: int) -> tuple[list[str], list[int], list[str], dict]:
    """Tokens (padded to the model's vocab as Qwen pads it), their types, the BPE merges and the special ids."""
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    if tok["model"]["type"] != "BPE":
        raise SystemExit(f"{model_dir}/tokenizer.json: a {tok['model']['type']} tokenizer, expected BPE")
    by_id: dict[int, str] = {i: t for t, i in tok["model"]["vocab"].items()}
    types: dict[int, int] = {}
    for added in tok.get("added_tokens", []):
        by_id[added["id"]] = added["content"]
        types[added["id"]] = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
    if max(by_id) >= vocab_size:
        raise SystemExit(f"tokenizer id {max(by_id)} is past the model's vocab_size {vocab_size}")
    tokens = [by_id.get(i, f"[PAD{i}]") for i in range(vocab_size)]
    token_types = [
        int(types.get(i, gguf.TokenType.NORMAL if i in by_id else gguf.TokenType.UNUSED))
        for i in range(vocab_size)
    ]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"].get("merges", [])]
    cfg_path = model_dir / "tokenizer_config.json"
    tok_cfg = json.loads(cfg_path.read_text()) if cfg_path.exists() else {}
    ids = {t: i for i, t in by_id.items()}
    special = {
        k: ids[v] for k in ("eos_token", "pad_token", "bos_token") if isinstance(v := tok_cfg.get(k), str)
    }
    return tokens, token_types, merges, special


def quantised(
    data: np.ndarray, qtype: gguf.GGMLQuantizationType
) -> tuple[np.ndarray, gguf.GGMLQuantizationType]:
    """Matrices in `qtype`; 1-D tensors (norms, biases) stay f32, as llama.cpp's quantiser leaves them."""
    if data.ndim < 2:
        return data, gguf.GGMLQuantizationType.F32
    block = gguf.GGML_QUANT_SIZES[qtype][0]
    if data.shape[-1] % block:
        raise SystemExit(f"a row of {data.shape[-1]} values is not whole blocks of {block} for {qtype.name}")
    return gguf.quants.quantize(data, qtype), qtype


def write(model_dir: Path, out: Path, type_name: str) -> None:
    cfg = read_config(model_dir)
    qtype, ftype = TYPES[type_name]
    n_layers = cfg["num_hidden_layers"]
    n_heads = cfg["num_attention_heads"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // n_heads
    if head_dim * n_heads != cfg["hidden_size"]:
        raise SystemExit(
            "head_dim x num_attention_heads != hidden_size: llama.cpp's qwen2 does not take that shape"
        )
    rope = cfg.get("rope_parameters") or {}
    if rope.get("rope_type", "default") != "default":
        raise SystemExit(f"rope_type {rope['rope_type']!r}: only the default rope is written")

    w = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.QWEN2])
    w.add_name(model_dir.name)
    w.add_context_length(cfg.get("max_position_embeddings", 32768))
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(n_layers)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(n_heads)
    w.add_head_count_kv(cfg.get("num_key_value_heads", n_heads))
    w.add_rope_freq_base(float(rope.get("rope_theta", cfg.get("rope_theta", 10000.0))))
    w.add_layer_norm_rms_eps(float(cfg["rms_norm_eps"]))
    w.add_file_type(ftype)

    tokens, token_types, merges, special = vocabulary(model_dir, cfg["vocab_size"])
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(tokens)
    w.add_token_types(token_types)
    w.add_token_merges(merges)
    if "eos_token" in special:
        w.add_eos_token_id(special["eos_token"])
    w.add_pad_token_id(special.get("pad_token", special.get("eos_token", 0)))
    w.add_add_bos_token(False)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, n_layers)
    tied = cfg.get("tie_word_embeddings", False)
    for name, data in tensors(model_dir):
        if tied and name == "lm_head.weight":
            continue  # llama.cpp's qwen2 reads the embedding as the output projection when output.weight is absent
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if new is None:
            raise SystemExit(f"{name}: no GGUF name for this tensor")
        q, t = quantised(data, qtype)
        w.add_tensor(new, q, raw_dtype=t)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model_dir", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--type", choices=sorted(TYPES), default="q4_0")
    a = p.parse_args(argv)
    tmp = a.out.with_name(a.out.name + ".tmp")
    write(a.model_dir, tmp, a.type)
    tmp.replace(a.out)  # a killed run leaves no half-written file under the final name


if __name__ == "__main__":
    main(sys.argv[1:])
