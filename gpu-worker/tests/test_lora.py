"""LoRA through peft: only adapters train, the reference is the base without adapters (after a warm start it is
the warm-started adapter: test_warm_start_reference.py), rollouts get merged weights, and checkpoints restore
the adapters; full fine-tuning steps through the same path."""

import json

import pytest
import torch
import transformers
from peft import PeftModel
from safetensors.torch import load_file

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.checkpoint import TrainerState, load_latest_checkpoint, save_checkpoint
from toolrl_learner.train.packing import pack_batch
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.synthetic import random_group
from toolrl_learner.train.trainer import Trainer


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=64, num_layers=2, num_heads=4))


def _cfg(tiny_dir, **kw):
    return LearnerConfig(model_path=str(tiny_dir), dtype="fp32", lr=1e-2, use_kl_loss=True, **kw)


def _groups():
    return [
        random_group("r", f"e0-p{i}", vocab=900, g=4, response_len=8, tool_len=4, seed=i) for i in range(2)
    ]


def _logprobs(policy, groups, model=None):
    batch = LearnerBatch.from_groups(groups, 0)
    (mb,) = pack_batch(batch, 4096)
    with torch.no_grad():
        model = model or policy.base
        hidden = model.forward_hidden(mb.input_ids, mb.position_ids, mb.cu_seqlens)
        return (
            torch.log_softmax(model.lm_head(hidden[mb.pred_rows]), -1)
            .gather(1, mb.targets[:, None])
            .squeeze(1)
        )


@pytest.mark.parametrize("lora_rank", [None, 4])
def test_lora_and_full_fine_tuning_both_step_on_cpu(tiny_dir, lora_rank):
    kw = (
        dict(lora_rank=lora_rank, lora_alpha=8.0, lora_target_modules=("q_proj", "v_proj", "up_proj"))
        if lora_rank
        else {}
    )
    policy = Policy(_cfg(tiny_dir, **kw), tiny_dir, torch.device("cpu"))
    trainer = Trainer(policy.cfg, policy)
    trainable = dict(policy.named_trainable_parameters())
    frozen = {n: p.detach().clone() for n, p in policy.base.named_parameters() if not p.requires_grad}
    before = {n: p.detach().clone() for n, p in trainable.items()}
    m1 = trainer.step(_groups(), 0)
    m2 = trainer.step(_groups(), 0)
    assert any(not torch.equal(before[n], p) for n, p in trainable.items())
    assert m1["kl_loss"] == 0.0 and m2["kl_loss"] > 0  # the policy left the reference after step 1
    if lora_rank:
        assert (
            all(".lora_" in n for n in trainable) and len(trainable) == 2 * 3 * 2
        )  # A, B x 3 modules x 2 layers
        for n, p in policy.base.named_parameters():
            if n in frozen:
                assert torch.equal(frozen[n], p), n  # the base never moves
    else:
        assert not frozen and policy.reference is not None


def test_lora_reference_is_the_base_and_rollout_weights_are_merged_on_cpu(tiny_dir):
    cfg = _cfg(tiny_dir, lora_rank=4, lora_alpha=8.0)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    plain = Policy(cfg.replace(lora_rank=None, use_kl_loss=False), tiny_dir, torch.device("cpu"))
    groups = _groups()
    Trainer(cfg, policy).step(groups, 0)
    Trainer(cfg, policy).step(groups, 0)
    batch = LearnerBatch.from_groups(groups, 0)
    (mb,) = pack_batch(batch, 4096)
    # reference = base without adapters = the untouched initial model
    torch.testing.assert_close(
        policy.reference_logprobs(mb), plain.forward_old(mb).logprobs, rtol=0, atol=1e-6
    )
    # the adapters changed the policy ...
    trained = policy.forward_old(mb).logprobs
    assert (trained - plain.forward_old(mb).logprobs).abs().max() > 1e-3
    # ... and the merged plain CausalLM computes exactly the adapted policy
    merged = policy.rollout_model()
    assert not any(".lora_" in n or "base_layer" in n for n in merged.state_dict())
    torch.testing.assert_close(_logprobs(policy, groups, merged), trained, rtol=0, atol=1e-5)


def test_lora_checkpoint_round_trip_on_cpu(tiny_dir, tmp_path):
    cfg = _cfg(tiny_dir, lora_rank=4, lora_alpha=8.0, adv_estimator="gae")
    store = FolderBlobStore(tmp_path)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    trainer = Trainer(cfg, policy)
    trainer.step(_groups(), 0)
    save_checkpoint(store, "r", policy, trainer.state_dict(), TrainerState(step=1), tmp_path)
    files = {
        p.relative_to(tmp_path / "runs/r/checkpoints/step-1").as_posix()
        for p in tmp_path.rglob("*")
        if p.is_file()
    }
    assert {
        "adapter/adapter_config.json",
        "adapter/adapter_model.safetensors",
        "trainable.safetensors",
        "optimizer.pt",
        "COMPLETE.json",
    } <= files
    assert "model/model.safetensors" not in files  # the base is the model folder; only adapters are saved
    # trainable.safetensors holds what peft's folder does not: the value head
    head = load_file(str(tmp_path / "runs/r/checkpoints/step-1/trainable.safetensors"))
    assert sorted(head) == ["value_head.bias", "value_head.weight"]

    # A standard peft folder: transformers' model of the base folder + PeftModel computes the trained policy
    adapter = tmp_path / "runs/r/checkpoints/step-1/adapter"
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"] == str(
        tiny_dir
    )
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(tiny_dir), dtype=torch.float32)
    peft_model = PeftModel.from_pretrained(hf, str(adapter)).eval()
    batch = LearnerBatch.from_groups(_groups(), 0)
    ids = batch.token_ids[0]
    with torch.no_grad():
        hf_logp = peft_model(input_ids=ids[None]).logits[0].log_softmax(-1)
        ours = policy.rollout_model().forward_batch(ids[None])[0].log_softmax(-1)  # merged, our decoder
    torch.testing.assert_close(hf_logp, ours, rtol=0, atol=1e-5)
    with torch.no_grad(), peft_model.disable_adapter():
        base_logp = peft_model(input_ids=ids[None]).logits[0].log_softmax(-1)
    assert (hf_logp - base_logp).abs().max() > 1e-4  # the adapter is not a no-op after a step

    fresh = Policy(cfg, tiny_dir, torch.device("cpu"))
    state, optimizer = load_latest_checkpoint(store, "r", fresh, tmp_path)
    assert state.step == 1 and optimizer["step"] == 1
    for (n, a), (_, b) in zip(
        policy.named_trainable_parameters(), fresh.named_trainable_parameters(), strict=True
    ):
        assert torch.equal(a, b), n


def test_lora_on_chosen_layers_trains_only_those_and_steps_on_cpu(tiny_dir):
    # model.lora.layers_to_transform: [1] puts adapters on the top layer alone; the bottom layer's weights, and
    # every base weight, are frozen, and a step moves only the top layer's adapters.
    policy = Policy(
        _cfg(tiny_dir, lora_rank=4, lora_alpha=8.0, lora_layers_to_transform=(1,)),
        tiny_dir,
        torch.device("cpu"),
    )
    names = [n for n, _ in policy.named_trainable_parameters()]
    assert names and all(".layers.1." in n and ".lora_" in n for n in names)
    trainer = Trainer(policy.cfg, policy)
    before = {n: p.detach().clone() for n, p in policy.base.named_parameters()}
    trainer.step(_groups(), 0)
    moved = {n for n, p in policy.base.named_parameters() if not torch.equal(p, before[n])}
    assert moved and moved <= set(names) and any("lora_B" in n for n in moved)


def test_a_lora_checkpoint_merges_into_the_weights_rollouts_get_on_cpu(tiny_dir, tmp_path):
    # `toolrl eval/generate --policy checkpoints/step-<S>` on a LoRA run: export --adapter merges the adapter into
    # the base its adapter_config.json names, giving exactly the weights the run published.
    from toolrl_learner.model.hf_io import load_pretrained
    from toolrl_learner.model.merge import merged_folder
    from toolrl_learner.train.checkpoint import _save_adapter

    policy = Policy(_cfg(tiny_dir, lora_rank=4, lora_alpha=8.0), tiny_dir, torch.device("cpu"))
    with torch.no_grad():
        for n, p in policy.base.named_parameters():
            if "lora_B" in n:
                p.normal_(generator=torch.Generator().manual_seed(0))
    _save_adapter(policy, tmp_path / "step-1" / "adapter")
    out = merged_folder(tmp_path / "step-1" / "adapter", None, tmp_path / "merged")
    want = policy.rollout_model().state_dict()
    got = load_pretrained(out).state_dict()
    assert got.keys() == want.keys()
    assert all(torch.equal(got[k], want[k]) for k in got)
    assert (out / "tokenizer.json").is_file()
