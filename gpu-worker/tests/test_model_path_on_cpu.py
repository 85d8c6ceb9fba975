"""model.path resolution: a local folder, `tiny`, or a Hub id; anything else fails naming the path."""

import pytest

from toolrl_learner.train.policy import resolve_model_dir


def test_local_folder_and_tiny_on_cpu(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert resolve_model_dir(str(tmp_path / "m"), tmp_path) == tmp_path / "m"
    tiny = resolve_model_dir("tiny", tmp_path)
    assert tiny == tmp_path / "model-tiny" and (tiny / "config.json").is_file()


def test_tiny_variants_take_the_run_seed_for_the_weights_only_on_cpu(tmp_path):
    import json

    from safetensors.torch import load_file

    a = resolve_model_dir("tiny:mha", tmp_path / "a", seed=0)
    b = resolve_model_dir("tiny:mha", tmp_path / "b", seed=1)
    assert a.name == "model-tiny-mha"
    cfg = json.loads((a / "config.json").read_text())
    assert (cfg["num_attention_heads"], cfg["num_key_value_heads"]) == (4, 4)
    # Another seed draws other weights over the same vocabulary.
    assert (a / "tokenizer.json").read_text() == (b / "tokenizer.json").read_text()
    wa, wb = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert not all((wa[k] == wb[k]).all() for k in wa if k.endswith("q_proj.weight"))
    with pytest.raises(
        ValueError, match="no tiny variant or preset 'huge'; one of tiny:mha, tiny:qwen2.5-0.5b"
    ):
        resolve_model_dir("tiny:huge", tmp_path / "c")


def test_a_folder_without_config_is_refused_on_cpu(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no config.json there"):
        resolve_model_dir(str(tmp_path / "empty"), tmp_path)


def test_a_hub_id_that_cannot_be_fetched_names_the_id_and_the_cause_on_cpu(tmp_path, monkeypatch):
    # Offline (as CI is): the Hub client refuses at once, and the error says what was asked and why it failed.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match=r"'no-such-org/no-such-model'.*Hugging Face Hub failed"):
        resolve_model_dir("no-such-org/no-such-model", tmp_path)
    assert not (tmp_path / "hub" / "no-such-org--no-such-model" / "config.json").exists()
