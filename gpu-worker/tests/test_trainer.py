"""The trainer step and its configuration: read from the typed sections generated from the zod schemas, the LR schedule,
every estimator stepping, gradient accumulation equal to one big batch, masked tokens inert."""

import copy
import dataclasses
import math

import pytest
import torch

from toolrl_learner.config import LearnerConfig, section_fields
from toolrl_learner.contracts import ContractError
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.run_config import LoraConfig, RunConfig
from toolrl_learner.train.optim import lr_at
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.synthetic import random_group
from toolrl_learner.train.trainer import Trainer


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=64, num_layers=2, num_heads=4))


def _groups(n=2, g=4, version=0):
    return [
        random_group("r", f"e0-p{i}", vocab=900, g=g, response_len=12, tool_len=5, version=version, seed=i)
        for i in range(n)
    ]


def _weights(policy):
    return {n: p.detach().clone() for n, p in policy.base.named_parameters()}


def test_defaults_are_the_generated_schemas_on_cpu():
    # A run config that sets nothing the learner reads gives LearnerConfig's defaults: the generated sections'
    # (run_config.py, from the zod schemas), field by field.
    read = LearnerConfig.from_run_config({"model": {"path": "tiny"}, "data": {"train": "t.parquet"}})
    assert dataclasses.asdict(read) == dataclasses.asdict(LearnerConfig())


def test_every_learner_field_is_read_from_the_typed_run_config_on_cpu():
    # A field renamed or dropped on the zod side no longer reaches LearnerConfig: fail here rather than train at
    # the learner's default. Every section the learner reads is set, and every optional key it reads.
    lora = {"rank": 4, "alpha": 8, "layers_to_transform": [0]}
    run = RunConfig.from_dict(
        {
            "model": {"path": "tiny", "lora": lora, "chat_template": "{{ messages }}"},
            "data": {"train": "t"},
            "algorithm": {"loss_agg_mode": "token-mean", "loss_scale_factor": 2, "clip_ratio_c": 3},
            "critic": {
                "model": {"path": "tiny", "lora": lora},
                "ppo_mini_batch_size": 1,
                "ppo_epochs": 1,
                "cliprange_value": 0.1,
            },
            "trainer": {
                "sft": {
                    "data": "s.jsonl",
                    "seed": 7,
                    "ptx_coef": 0.1,
                    "ptx_data": "p.jsonl",
                    "ptx_batch_size": 2,
                },
                "max_steps": 3,
                "ppo_mini_batch_size": 1,
                "save_every": 2,
            },
            "logging": {"wandb": {"project": "p", "entity": "e"}},
        }
    )
    fields = {f.name for f in dataclasses.fields(LearnerConfig)}
    assert fields - set(section_fields(run)) == set()
    assert isinstance(run.model.lora, LoraConfig) and run.model.lora.layers_to_transform == (0,)


def test_from_run_config_reads_sections_and_stage_overrides_on_cpu():
    run = {
        "model": {"path": "tiny", "lora": {"rank": 128, "alpha": 256}, "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "rollout": {"temperature": 0.7, "multi_turn": {"max_total_response_length": 512}},
        "algorithm": {"adv_estimator": "dr_grpo", "clip_ratio_high": 0.3},
        "trainer": {"lr": 2e-6, "sft": {"data": "runs/r/input/sft.jsonl", "steps": 5}},
        "stages": [
            {"name": "format", "data": {"train": "f.parquet"}, "overrides": {"trainer": {"lr": 1e-5}}}
        ],
    }
    cfg = LearnerConfig.from_run_config(run)
    assert (cfg.lora_rank, cfg.lora_alpha, cfg.use_lora) == (128, 256, True)
    assert (cfg.temperature, cfg.max_total_response_length, cfg.clip_ratio_high) == (0.7, 512, 0.3)
    assert (cfg.sft_data, cfg.sft_steps, cfg.sft_lr) == ("runs/r/input/sft.jsonl", 5, 1e-4)
    # Dr. GRPO's defaults: its constant normaliser, L = the generation budget
    assert cfg.resolved_loss_agg_mode == "seq-mean-token-sum-norm" and cfg.loss_norm_constant == 512.0
    assert LearnerConfig.from_run_config(run, stage="format").lr == 1e-5
    with pytest.raises(ValueError, match="unknown stage 'x'"):
        LearnerConfig.from_run_config(run, stage="x")


def test_adam_betas_reach_the_optimizer_and_set_its_step_on_cpu(tiny_dir):
    # trainer.adam_beta1/adam_beta2 (MindSpeed-RL's actor_config.adam_beta1/2) are the RL optimizer's. With both
    # 0 AdamW keeps no history: a step moves each weight by lr * g / (|g| + eps), the learning rate for all but
    # the smallest gradients, the second step too; with the defaults the second step's moves mix in the first
    # step's gradients and most are smaller (measured: median 0.98 x lr against 0.68 x lr).
    run = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"lr": 1e-3, "adam_beta1": 0.0, "adam_beta2": 0.0},
    }
    cfg = LearnerConfig.from_run_config(run)
    assert (cfg.adam_beta1, cfg.adam_beta2) == (0.0, 0.0)
    other = [
        random_group("r", f"e0-p{i}", vocab=900, g=4, response_len=12, tool_len=5, seed=10 + i)
        for i in range(2)
    ]

    def second_step_moves(cfg):
        policy = Policy(cfg, tiny_dir, torch.device("cpu"))
        trainer = Trainer(cfg, policy)
        assert all(g["betas"] == (cfg.adam_beta1, cfg.adam_beta2) for g in trainer.optimizer.param_groups)
        trainer.step(_groups(), 0)
        before = _weights(policy)
        trainer.step(other, 0)
        moved = torch.cat([(p - before[n]).abs().flatten() for n, p in _weights(policy).items()])
        return moved[moved > 0] / 1e-3

    memoryless = second_step_moves(cfg)
    assert memoryless.numel() > 1000 and float(memoryless.max()) <= 1.0 + 1e-5
    assert float(memoryless.median()) > 0.95 and float(memoryless.quantile(0.1)) > 0.7
    default = second_step_moves(dataclasses.replace(cfg, adam_beta1=0.9, adam_beta2=0.999))
    assert float(default.median()) < 0.85


def test_dedup_samples_packs_repeats_once_and_takes_the_same_step_on_cpu(tiny_dir):
    # trainer.dedup_samples: a group's samples with the same tokens run through the model once. Two groups where
    # each sample appears twice (with different rewards): the step's packed tokens drop by what the copies held,
    # and the step (loss, gradient norm, weights after it) is the one without deduplication, up to rounding. The
    # copies' rewards are not 1 - r: their advantages would cancel the first's exactly, leaving gradients of
    # rounding noise, which Adam's first step scales up to about lr whatever their size.
    run = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"lr": 1e-3, "dedup_samples": True},
    }
    cfg = LearnerConfig.from_run_config(run)
    assert cfg.dedup_samples and not LearnerConfig().dedup_samples
    groups = []
    for g in _groups(2, g=3):
        trajs = g["trajectories"]
        again = [{**t, "reward": 0.25 + 0.5 * t["reward"], "sampleIndex": 3 + i} for i, t in enumerate(trajs)]
        groups.append({**g, "trajectories": [*trajs, *again]})

    def step(cfg):
        policy = Policy(cfg, tiny_dir, torch.device("cpu"))
        metrics = Trainer(cfg, policy).step(groups, 0)
        return metrics, _weights(policy)

    once, w_once = step(cfg)
    plain, w_plain = step(dataclasses.replace(cfg, dedup_samples=False))
    assert plain["packed_tokens"] < plain["tokens"]  # the CPU shares each group's prompt already
    # Each copy's own tokens, the prompt (random_group's 16 tokens, shared already) excepted: 2 groups x 3 copies.
    copies_own = plain["tokens"] / 2 - 2 * 3 * 16
    assert once["packed_tokens"] == plain["packed_tokens"] - copies_own
    for k in ("pg_loss", "grad_norm", "entropy", "loss_tokens", "reward_mean"):
        assert once[k] == pytest.approx(plain[k], rel=1e-5, abs=1e-7), k
    # Adam moves each weight by about lr (1e-3) whatever its gradient's size: within 0.1% of that.
    for n, w in w_plain.items():
        torch.testing.assert_close(w_once[n], w, rtol=0, atol=1e-6)


def test_share_batch_prefix_packs_the_common_beginning_once_and_takes_the_same_step_on_cpu(tiny_dir):
    # trainer.share_batch_prefix: three groups whose prompts begin with the same 12 tokens (a system prompt), packed
    # into one micro-batch: the step packs those 12 once instead of once a group, and takes the same step (loss,
    # gradient norm, weights after it) as without, up to rounding.
    run = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"lr": 1e-3, "share_batch_prefix": True},
    }
    cfg = LearnerConfig.from_run_config(run)
    assert cfg.share_batch_prefix and not LearnerConfig().share_batch_prefix
    system = list(range(100, 112))
    groups = []
    for g in _groups(3, g=3):
        trajs = [
            {**t, "tokenIds": system + t["tokenIds"], "promptLength": t["promptLength"] + 12}
            for t in g["trajectories"]
        ]
        for t in trajs:
            for key, fill in (("lossMask", 0), ("behaviorLogprobs", 0.0), ("policyVersions", -1)):
                t[key] = [fill] * 12 + t[key]
            t["turns"] = [
                {**u, "tokenStart": u["tokenStart"] + 12, "tokenEnd": u["tokenEnd"] + 12} for u in t["turns"]
            ]
        groups.append({**g, "trajectories": trajs})

    def step(cfg):
        policy = Policy(cfg, tiny_dir, torch.device("cpu"))
        metrics = Trainer(cfg, policy).step(groups, 0)
        return metrics, _weights(policy)

    rooted, w_rooted = step(cfg)
    plain, w_plain = step(dataclasses.replace(cfg, share_batch_prefix=False))
    assert rooted["micro_batches"] == plain["micro_batches"] == 1
    assert rooted["packed_tokens"] == plain["packed_tokens"] - 2 * 12
    for k in ("pg_loss", "grad_norm", "entropy", "loss_tokens", "reward_mean"):
        assert rooted[k] == pytest.approx(plain[k], rel=1e-5, abs=1e-7), k
    for n, w in w_plain.items():
        torch.testing.assert_close(w_rooted[n], w, rtol=0, atol=1e-6)


def test_bad_config_names_the_field_on_cpu():
    with pytest.raises(ContractError, match="algorithm"):
        LearnerConfig.from_run_config(
            {"model": {"path": "tiny"}, "data": {"train": "t"}, "algorithm": {"adv_estimator": "ppo2"}}
        )


def test_lr_schedule_by_hand_on_cpu():
    kw = dict(lr=1.0, scheduler="cosine", warmup_steps=2, total_steps=6, min_lr_ratio=0.1)
    # warmup: (step + 1) / 2 -> 0.5, 1.0 ; cosine over steps 2..6 (span 4):
    # step 2: progress 0 -> 1.0 ; step 4: progress 0.5 -> 0.1 + 0.9 * 0.5 * (1 + cos(pi/2)) = 0.55 ; step >= 6: 0.1
    got = [lr_at(s, **kw) for s in (0, 1, 2, 4, 6, 9)]
    assert got == pytest.approx([0.5, 1.0, 1.0, 0.55, 0.1, 0.1])
    assert lr_at(5, lr=3.0, scheduler="constant", warmup_steps=0, total_steps=None) == 3.0
    with pytest.raises(ValueError, match="needs the run's length"):
        lr_at(3, lr=1.0, scheduler="cosine", warmup_steps=0, total_steps=None)


def test_wsd_schedule_by_hand_on_cpu():
    # warmup over 2 steps, stable until the last 4 of 10 steps (6..9), then a cosine to 0.1 over them (span 4):
    # step 6: progress 0 -> 1.0 ; step 8: progress 0.5 -> 0.55 ; step 10 and after: 0.1
    kw = dict(lr=1.0, scheduler="wsd", warmup_steps=2, total_steps=10, min_lr_ratio=0.1, decay_steps=4)
    got = [lr_at(s, **kw) for s in (0, 1, 2, 5, 6, 8, 10, 12)]
    assert got == pytest.approx([0.5, 1.0, 1.0, 1.0, 1.0, 0.55, 0.1, 0.1])
    # more decay steps than the run has after its warmup: the decay starts when the warmup ends
    assert lr_at(2, **{**kw, "decay_steps": 50}) == pytest.approx(1.0)
    assert lr_at(6, **{**kw, "decay_steps": 50}) == pytest.approx(0.55)
    with pytest.raises(ValueError, match="set decay_steps"):
        lr_at(3, **{**kw, "decay_steps": 0})
    with pytest.raises(ValueError, match="wsd needs the run's length"):
        lr_at(3, **{**kw, "total_steps": None})


REQUIRED = {"reward_mean", "reward_std", "tool_calls_per_trajectory", "pg_loss", "entropy", "clip_frac",
            "adv_mean", "staleness_mean", "tokens_per_s", "step_time_s", "grad_norm", "lr"}  # fmt: skip


@pytest.mark.parametrize(
    "overrides",
    [
        dict(adv_estimator="grpo", use_kl_loss=True),
        dict(adv_estimator="dr_grpo"),
        dict(
            adv_estimator="rloo",
            importance_sampling_level="sequence",
            clip_ratio_low=3e-4,
            clip_ratio_high=4e-4,
        ),
        dict(adv_estimator="reinforce_pp", use_kl_in_reward=True, clip_ratio_c=3.0),
        dict(adv_estimator="gae", ppo_epochs=2),
    ],
)
def test_every_estimator_steps_on_cpu(tiny_dir, overrides):
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", lr=1e-3, micro_batch_tokens=128, **overrides)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    trainer = Trainer(cfg, policy)
    before = _weights(policy)
    m = trainer.step(_groups(), 0)
    assert REQUIRED <= m.keys()
    assert all(math.isfinite(v) for v in m.values()), m
    assert m["micro_batches"] > 1 and m["tool_calls_per_trajectory"] == 1.0
    assert any(not torch.equal(before[n], p) for n, p in policy.base.named_parameters())
    if cfg.adv_estimator == "gae":
        assert "vf_loss" in m and float(policy.value_head.weight.detach().abs().sum()) > 0
        assert m["ppo_kl"] != 0  # the second PPO epoch sees the policy the first one moved
    if cfg.use_kl_loss:
        assert "kl_loss" in m
    if cfg.use_kl_in_reward:
        assert "kl_in_reward" in m


@pytest.mark.parametrize(
    "mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
)
def test_micro_batches_accumulate_to_the_full_batch_gradient_on_cpu(tiny_dir, mode):
    # One step with one micro-batch vs many: normalisers are batch-wide, so the update must be the same.
    groups = _groups()
    results = []
    for budget in (4096, 64):
        cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", lr=1e-3, micro_batch_tokens=budget,
                            loss_agg_mode=mode, rollout_is="none")  # fmt: skip
        policy = Policy(cfg, tiny_dir, torch.device("cpu"))
        m = Trainer(cfg, policy).step(copy.deepcopy(groups), 0)
        grads = {n: p.grad.clone() for n, p in policy.base.named_parameters() if p.grad is not None}
        results.append((m, grads, _weights(policy)))
    (m_one, g_one, w_one), (m_many, g_many, w_many) = results
    assert m_one["micro_batches"] == 1 and m_many["micro_batches"] > 3
    assert m_many["grad_norm"] == pytest.approx(m_one["grad_norm"], rel=1e-4)
    assert m_many["pg_loss"] == pytest.approx(m_one["pg_loss"], abs=1e-6)
    assert g_one.keys() == g_many.keys() and len(g_one) > 10
    for n in g_one:
        torch.testing.assert_close(g_many[n], g_one[n], rtol=1e-4, atol=1e-8)
    # Adam's first step is ~ lr * sign(g): weights agree to a small fraction of lr (1e-3)
    for n in w_one:
        torch.testing.assert_close(w_many[n], w_one[n], rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean"])
def test_filter_groups_norm_batch_counts_the_dropped_groups_in_the_loss_on_cpu(tiny_dir, mode):
    # GIVEN a step that kept 2 groups of the 8 its batch planned (filter_groups dropped the other 6)
    results = {}
    for norm in ("kept", "batch"):
        cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", lr=1e-3, batch_prompts=8, loss_agg_mode=mode,
                            rollout_is="none", filter_groups_norm=norm)  # fmt: skip
        policy = Policy(cfg, tiny_dir, torch.device("cpu"))
        m = Trainer(cfg, policy).step(copy.deepcopy(_groups(n=2)), 0)
        grads = {n: p.grad.clone() for n, p in policy.base.named_parameters() if p.grad is not None}
        results[norm] = (m, grads)
    (m_kept, g_kept), (m_batch, g_batch) = results["kept"], results["batch"]
    # THEN under `batch` the gradient is 2/8 of the one averaged over the kept groups, as if the 6 dropped groups
    # had been trained with zero advantages
    assert m_batch["grad_norm"] == pytest.approx(m_kept["grad_norm"] * 2 / 8, rel=1e-5)
    assert g_kept.keys() == g_batch.keys() and len(g_kept) > 10
    for n in g_kept:
        torch.testing.assert_close(g_batch[n], g_kept[n] * 0.25, rtol=1e-5, atol=1e-9)


def test_filter_groups_norm_is_1_without_dropped_groups_and_under_kept():
    from toolrl_learner.train.minibatch import filtered_loss_norm

    cfg = LearnerConfig(batch_prompts=16, filter_groups_norm="batch")
    assert [filtered_loss_norm(cfg, k) for k in (16, 20, 4, 0)] == [1.0, 1.0, 4.0, 1.0]
    assert filtered_loss_norm(dataclasses.replace(cfg, filter_groups_norm="kept"), 4) == 1.0


def test_masked_tokens_behaviour_logprobs_and_versions_change_nothing_on_cpu(tiny_dir):
    # Tool-result and prompt tokens (loss mask 0) carry garbage behaviour log-probs and policy versions:
    # same update, same staleness. Sampled tokens are v2 and the learner is at v3, so staleness is 1 in
    # both; counted, the junk versions would make it 3 - 0 = 3 (v0) or negative (v50).
    groups = _groups(version=2)
    noisy = copy.deepcopy(groups)
    for g in noisy:
        for t in g["trajectories"]:
            mask = t["lossMask"]
            t["behaviorLogprobs"] = [
                b if m else 123.0 for b, m in zip(t["behaviorLogprobs"], mask, strict=True)
            ]
            versions = t["policyVersions"]
            t["policyVersions"] = [versions[i] if m else (0, 50)[i % 2] for i, m in enumerate(mask)]
    assert sum(v in (0, 50) for v in noisy[0]["trajectories"][0]["policyVersions"]) > 10
    weights, metrics = [], []
    for gs in (groups, noisy):
        cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", lr=1e-3, rollout_is="sequence")
        policy = Policy(cfg, tiny_dir, torch.device("cpu"))
        metrics.append(Trainer(cfg, policy).step(gs, 3))
        weights.append(_weights(policy))
    for n in weights[0]:
        assert torch.equal(weights[0][n], weights[1][n]), n
    assert (metrics[1]["staleness_mean"], metrics[1]["staleness_max"]) == (1.0, 1.0)
    timing = {"tokens_per_s", "step_time_s"}
    assert {k: v for k, v in metrics[1].items() if k not in timing} == {
        k: v for k, v in metrics[0].items() if k not in timing
    }


def test_groups_without_signal_are_counted_when_trained_on_cpu(tiny_dir):
    # filter_groups off: a group of equal rewards and a group of one train with zero (group-relative) advantage
    groups = _groups(n=1)
    flat = random_group("r", "e0-flat", vocab=900, g=4, response_len=6, seed=7)
    for t in flat["trajectories"]:
        t["reward"] = 1.0
    single = random_group("r", "e0-one", vocab=900, g=1, response_len=6, seed=8)
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", filter_groups=False)
    m = Trainer(cfg, Policy(cfg, tiny_dir, torch.device("cpu"))).step(groups + [flat, single], 0)
    assert m["no_signal_groups"] == 2.0


def test_step_metrics_give_the_fraction_of_each_finish_reason_on_cpu(tiny_dir):
    # 2 groups x 4 trajectories: 5 ended on eos, 2 on an error (e.g. a template that broke the token prefix),
    # 1 cut by the response budget -> 5/8, 2/8, 1/8; reasons that did not occur are absent
    groups = _groups(n=2, g=4)
    reasons = ["eos", "eos", "error", "eos", "max_total_response_length", "eos", "error", "eos"]
    for t, reason in zip([t for g in groups for t in g["trajectories"]], reasons, strict=True):
        t["finishReason"] = reason
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", filter_groups=False)
    m = Trainer(cfg, Policy(cfg, tiny_dir, torch.device("cpu"))).step(groups, 0)
    finish = {k: v for k, v in m.items() if k.startswith("finish/")}
    assert finish == {"finish/eos": 5 / 8, "finish/error": 2 / 8, "finish/max_total_response_length": 1 / 8}


def test_step_metrics_name_the_curriculum_stage_and_use_its_overrides_on_cpu(tiny_dir):
    # Two stages; the batch's (first) group says which one the step belongs to and whose lr it uses.
    run = {
        "model": {"path": str(tiny_dir), "dtype": "fp32"},
        "data": {"train": "t.parquet"},
        "trainer": {"lr": 1e-6},
        "stages": [
            {"name": "format", "data": {"train": "f.parquet"}, "overrides": {"trainer": {"lr": 1e-5}}},
            {"name": "full", "data": {"train": "t.parquet"}, "overrides": {"trainer": {"lr": 3e-5}}},
        ],
    }
    cfg = LearnerConfig.from_run_config(run)
    trainer = Trainer(cfg, Policy(cfg, tiny_dir, torch.device("cpu")), cfg.stage_configs(run))
    seen = []
    for stage in ("format", "full", None):
        g = random_group("r", f"e0-{stage}", vocab=900, g=2, response_len=6, seed=3)
        g["stage"] = stage
        m = trainer.step([g], 0)
        seen.append((m.get("stage_index"), m["lr"]))
    # constant schedule, no warmup: lr is the stage's own; a stage-less group runs the base config
    assert seen == [(0.0, 1e-5), (1.0, 3e-5), (None, 1e-6)]


def test_wsd_settings_reach_the_learner_and_its_warm_start():
    cfg = LearnerConfig.from_run_config(
        {
            "model": {"path": "tiny"},
            "data": {"train": "t.parquet"},
            "trainer": {
                "lr_scheduler": "wsd",
                "decay_steps": 7,
                "sft": {"data": "d.parquet", "lr_scheduler": "wsd", "decay_steps": 3},
            },
        }
    )
    assert (cfg.lr_scheduler, cfg.decay_steps, cfg.sft_lr_scheduler, cfg.sft_decay_steps) == (
        "wsd",
        7,
        "wsd",
        3,
    )
