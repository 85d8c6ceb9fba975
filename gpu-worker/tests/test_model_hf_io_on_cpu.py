"""Hugging Face folders in and out: our save loads in transformers and back, tied weights, shards, bad folders."""

from __future__ import annotations

import json

import pytest
import torch
import transformers
from safetensors.torch import load_file

from toolrl_learner.model.config import ModelConfig
from toolrl_learner.model.hf_io import load_pretrained, save_pretrained
from toolrl_learner.model.modeling import CausalLM, init_weights, pack


def _model(model_type: str, tied: bool) -> CausalLM:
    cfg = ModelConfig.from_hf(
        {
            "model_type": model_type,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "vocab_size": 100,
            "tie_word_embeddings": tied,
            "eos_token_id": 7,
        }
    )
    m = CausalLM(cfg)
    init_weights(m, seed=11, std=0.2)
    return m.eval()


@pytest.mark.parametrize("model_type,tied", [("qwen2", True), ("llama", False), ("qwen3", False)])
def test_save_load_round_trip_through_transformers_on_cpu(tmp_path, model_type, tied):
    ours = _model(model_type, tied)
    save_pretrained(ours, tmp_path / "a")
    saved = load_file(tmp_path / "a" / "model.safetensors")
    # transformers' convention: a tied lm_head is not written.
    assert ("lm_head.weight" in saved) == (not tied)

    hf = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "a", dtype=torch.float32).eval()
    ids = torch.arange(3, 40)
    with torch.no_grad():
        torch.testing.assert_close(
            hf(ids[None]).logits[0], ours.forward_batch(ids[None])[0], atol=1e-5, rtol=1e-5
        )

    hf.save_pretrained(tmp_path / "b")
    back = load_pretrained(tmp_path / "b")
    assert back.config == ours.config
    for name, t in ours.state_dict().items():
        torch.testing.assert_close(back.state_dict()[name], t, atol=0, rtol=0, msg=name)
    assert (back.lm_head.weight is back.model.embed_tokens.weight) == tied


def test_bf16_save_and_sharding_on_cpu(tmp_path):
    ours = _model("qwen2", True)
    save_pretrained(ours, tmp_path, dtype=torch.bfloat16, max_shard_bytes=20_000)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    shards = set(index["weight_map"].values())
    assert len(shards) > 1 and all((tmp_path / s).is_file() for s in shards)
    assert json.loads((tmp_path / "config.json").read_text())["dtype"] == "bfloat16"
    back = load_pretrained(tmp_path, dtype=torch.float32)
    for name, t in ours.state_dict().items():
        torch.testing.assert_close(back.state_dict()[name], t.to(torch.bfloat16).float(), atol=0, rtol=0)
    # Loading with the compute dtype of the learner's bf16 runs.
    assert load_pretrained(tmp_path, dtype=torch.bfloat16).model.embed_tokens.weight.dtype == torch.bfloat16


def test_trained_weights_survive_the_round_trip_on_cpu(tmp_path):
    ours = _model("qwen2", True).train()
    opt = torch.optim.SGD(ours.parameters(), lr=0.5)
    ids, pos, cu = pack([torch.arange(1, 12)])
    ours(ids, pos, cu)[:-1].log_softmax(-1).gather(1, ids[1:, None]).sum().neg().backward()
    opt.step()
    save_pretrained(ours, tmp_path)
    back = load_pretrained(tmp_path).eval()
    with torch.no_grad():
        torch.testing.assert_close(back(ids, pos, cu), ours.eval()(ids, pos, cu), atol=0, rtol=0)


def test_mismatched_checkpoint_is_named_on_cpu(tmp_path):
    save_pretrained(_model("qwen2", True), tmp_path)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["model_type"] = "qwen3"  # qwen3 expects q_norm/k_norm and no q/k/v bias
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ValueError, match=r"missing \['model.layers.0.self_attn.k_norm.weight'"):
        load_pretrained(tmp_path)
    with pytest.raises(FileNotFoundError, match="no config.json"):
        load_pretrained(tmp_path / "nowhere")
