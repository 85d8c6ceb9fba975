"""PPO as verl runs it: a separate critic model (its own decoder, optimiser and learning rate), mini-batches for
actor and critic, critic warm-up, and a checkpoint that restores both optimisers exactly; the shared-trunk value
head stays the default."""

import pytest
import torch

from toolrl_learner.algos.advantages import gae_advantages, outcome_token_rewards
from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.storage import FolderBlobStore
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.checkpoint import TrainerState, load_latest_checkpoint, save_checkpoint
from toolrl_learner.train.critic import Critic
from toolrl_learner.train.minibatch import mini_batches
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.synthetic import random_group
from toolrl_learner.train.trainer import Trainer

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    """A policy and a smaller critic over the same tokenizer (the tiny model's corpus BPE)."""
    policy = build_tiny(
        tmp_path_factory.mktemp("policy"), TinySpec(hidden_size=64, num_layers=2, num_heads=4)
    )
    critic = build_tiny(
        tmp_path_factory.mktemp("critic"), TinySpec(hidden_size=32, num_layers=1, num_heads=2)
    )
    return policy, critic


def _groups(n=4, g=2, seed=0):
    return [
        random_group("r", f"e0-p{i}", vocab=900, g=g, response_len=10, tool_len=4, seed=seed + i)
        for i in range(n)
    ]


def _cfg(dirs, **kw):
    policy_dir, critic_dir = dirs
    base = dict(
        model_path=str(policy_dir),
        dtype="fp32",
        adv_estimator="gae",
        lr=1e-3,
        critic_model_path=str(critic_dir),
        critic_lr=5e-3,
        filter_groups=False,
    )
    return LearnerConfig(**{**base, **kw})


def _build(cfg, dirs):
    torch.manual_seed(0)
    policy = Policy(cfg, dirs[0], CPU)
    critic = Critic(cfg, dirs[1], CPU, None) if cfg.has_critic else None
    return policy, critic, Trainer(cfg, policy, critic=critic)


def test_the_critic_is_its_own_model_and_the_policy_has_no_value_head_on_cpu(dirs):
    _, critic, trainer = _build(_cfg(dirs), dirs)
    assert trainer.policy.value_head is None
    assert critic.base.config.hidden_size == 32  # smaller than the policy's 64
    policy_params = {id(p) for g in trainer.optimizer.param_groups for p in g["params"]}
    critic_params = {id(p) for g in critic.optimizer.param_groups for p in g["params"]}
    assert policy_params.isdisjoint(critic_params)
    assert critic.optimizer.param_groups[0]["lr"] == 5e-3


def test_first_value_loss_is_the_formula_and_it_falls_on_a_fixed_batch_on_cpu(dirs):
    cfg = _cfg(dirs, gamma=0.9, lam=0.8)
    _, critic, trainer = _build(cfg, dirs)
    groups = _groups()
    batch = LearnerBatch.from_groups(groups, 0)
    # The head starts at zero, so V_old = V = 0 and GAE's returns are the discounted outcome rewards:
    # the first update's loss is 0.5 * token-mean(R^2) (nothing to clip).
    ones = torch.ones(batch.num_loss_tokens)
    rewards = outcome_token_rewards(batch.rewards, ones, batch.seq_ids)
    _, returns = gae_advantages(
        rewards, torch.zeros_like(ones), ones, batch.seq_ids, batch.num_seqs, gamma=0.9, lam=0.8
    )
    losses = [trainer.step(groups, 0)["vf_loss"] for _ in range(6)]
    assert losses[0] == pytest.approx(0.5 * float((returns**2).mean()), rel=1e-5)
    assert losses[-1] < 0.5 * losses[0], losses


def test_mini_batches_step_actor_and_critic_once_per_mini_batch_on_cpu(dirs):
    cfg = _cfg(dirs, ppo_epochs=2, ppo_mini_batch_size=1, critic_ppo_epochs=3, critic_ppo_mini_batch_size=2)
    _, _, trainer = _build(cfg, dirs)
    m = trainer.step(_groups(n=4), 0)
    assert m["actor_updates"] == 2 * 4  # 2 epochs x 4 mini-batches of one group
    assert m["critic_updates"] == 3 * 2  # 3 epochs x 2 mini-batches of two groups
    # Without mini-batches: one actor step per epoch, as before.
    _, _, plain = _build(_cfg(dirs, ppo_epochs=2), dirs)
    assert plain.step(_groups(n=4), 0)["actor_updates"] == 2


def test_mini_batches_cover_every_group_once_per_epoch_in_a_reproducible_order_on_cpu():
    batch = LearnerBatch.from_groups(_groups(n=5, g=3), 0)
    plans = [mini_batches(batch, 2, seed=1, step=4, epoch=e) for e in range(3)]
    for plan in plans:
        assert [len(p) for p in plan] == [6, 6, 3]  # 2 + 2 + 1 groups of 3 samples
        assert sorted(s for p in plan for s in p) == list(range(15))
        for p in plan:  # whole groups only
            assert len({int(batch.group_index[s]) for s in p}) * 3 == len(p)
    assert plans[0] == mini_batches(batch, 2, seed=1, step=4, epoch=0)  # a resumed run repeats it
    assert plans[0] != plans[1] or plans[1] != plans[2]  # and epochs reshuffle
    assert mini_batches(batch, None, seed=1, step=4, epoch=0) == [list(range(15))]


def test_critic_warmup_trains_only_the_critic_first_on_cpu(dirs):
    cfg = _cfg(dirs, critic_warmup=2)
    policy, critic, trainer = _build(cfg, dirs)
    before = {n: p.detach().clone() for n, p in policy.base.named_parameters()}
    head = critic.value_head.weight.detach().clone()
    for _ in range(2):
        m = trainer.step(_groups(), 0)
        assert m["actor_updates"] == 0 and m["critic_updates"] == 1
    assert all(torch.equal(before[n], p) for n, p in policy.base.named_parameters())
    assert not torch.equal(head, critic.value_head.weight)
    assert trainer.step(_groups(), 0)["actor_updates"] == 1
    assert any(not torch.equal(before[n], p) for n, p in policy.base.named_parameters())


@pytest.mark.parametrize("lora", [False, True])
def test_resume_restores_both_optimisers_and_the_critic_exactly_on_cpu(dirs, tmp_path, lora):
    kw = (
        dict(critic_lora_rank=4, critic_lora_alpha=8.0, critic_lora_target_modules=("q_proj", "v_proj"))
        if lora
        else {}
    )
    cfg = _cfg(dirs, ppo_mini_batch_size=2, critic_ppo_epochs=2, **kw)
    store = FolderBlobStore(tmp_path)
    policy, critic, trainer = _build(cfg, dirs)
    for seed in (0, 10):
        trainer.step(_groups(seed=seed), 0)
    save_checkpoint(store, "r", policy, trainer.state_dict(), TrainerState(step=2), tmp_path, critic=critic)
    expected = "critic/adapter/adapter_model.safetensors" if lora else "critic/model/model.safetensors"
    assert (tmp_path / "runs/r/checkpoints/step-2" / expected).is_file()

    # WHEN a fresh learner resumes from the checkpoint
    policy2, critic2, trainer2 = _build(cfg, dirs)
    state, optimizer = load_latest_checkpoint(store, "r", policy2, tmp_path, critic=critic2)
    trainer2.load_state_dict(optimizer)

    # THEN both optimisers hold the same state, tensor for tensor, and the critic the same weights
    for a, b in ((trainer.optimizer, trainer2.optimizer), (critic.optimizer, critic2.optimizer)):
        sa, sb = a.state_dict(), b.state_dict()
        assert sa["param_groups"] == sb["param_groups"]
        assert sa["state"].keys() == sb["state"].keys()
        for k in sa["state"]:
            for name, t in sa["state"][k].items():
                assert torch.equal(t, sb["state"][k][name]), (k, name)
    for (n, a), (_, b) in zip(
        critic.named_trainable_parameters(), critic2.named_trainable_parameters(), strict=True
    ):
        assert torch.equal(a, b), n
    # AND the next step is the same step: same losses, same weights after
    m1 = trainer.step(_groups(seed=20), 0)
    m2 = trainer2.step(_groups(seed=20), 0)
    assert (m1["vf_loss"], m1["pg_loss"]) == (m2["vf_loss"], m2["pg_loss"])
    for (n, a), (_, b) in zip(policy.base.named_parameters(), policy2.base.named_parameters(), strict=True):
        assert torch.equal(a, b), n


def test_the_shared_trunk_value_head_stays_the_default_on_cpu(dirs):
    cfg = _cfg(dirs, critic_model_path=None)
    policy, critic, trainer = _build(cfg, dirs)
    assert critic is None and policy.value_head is not None
    m = trainer.step(_groups(), 0)
    assert "vf_loss" in m and "critic_updates" not in m


def test_the_run_config_critic_block_on_cpu(dirs):
    run = {
        "model": {"path": "tiny"},
        "data": {"train": "t.parquet"},
        "algorithm": {"adv_estimator": "gae", "cliprange_value": 0.2},
        "trainer": {"ppo_mini_batch_size": 4, "critic_warmup": 3, "ppo_epochs": 2},
        "critic": {
            "model": {"path": "tiny", "lora": {"rank": 8, "alpha": 16}},
            "lr": 2e-5,
            "ppo_epochs": 4,
            "cliprange_value": 0.5,
        },
    }
    cfg = LearnerConfig.from_run_config(run)
    assert (cfg.critic_model_path, cfg.critic_lr, cfg.critic_ppo_epochs, cfg.critic_cliprange_value) == (
        "tiny",
        2e-5,
        4,
        0.5,
    )
    assert (cfg.ppo_mini_batch_size, cfg.critic_warmup, cfg.critic_lora_rank, cfg.has_critic) == (
        4,
        3,
        8,
        True,
    )
    assert cfg.critic_ppo_mini_batch_size is None  # falls back to the actor's
