"""model.path resolution: a local folder, `tiny`, or a Hub id; anything else fails naming the path."""

import pytest

from toolrl_learner.train.policy import resolve_model_dir


def test_local_folder_and_tiny_on_cpu(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    assert resolve_model_dir(str(tmp_path / "m"), tmp_path) == tmp_path / "m"
    tiny = resolve_model_dir("tiny", tmp_path)
    assert tiny == tmp_path / "model-tiny" and (tiny / "config.json").is_file()


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
