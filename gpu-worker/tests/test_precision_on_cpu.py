"""The learner's compute dtype: bf16 autocast only where the CPU has bf16 units, and the learner's step (packed,
shared prompts, chunked log-probs) against a plain fp32 Hugging Face step: log-probs and gradients within the
stated tolerances, in fp32 and in bf16.

Measured on an AMD EPYC (AVX512-BF16) with this file's model: fp32 differs from the reference by summation order
only (log-probs 2e-6, gradient relative L2 error 6e-7); bf16 rounds every matrix product's inputs and outputs to 8
mantissa bits, the logits too, as bf16 training on a GPU does (log-probs 0.026, gradient 1.4%, cosine 1 - 9e-5).
The bounds (TOLERANCE) are 3-4x those, so that a CPU whose bf16 kernels accumulate in another order (Intel's
AMX; PyTorch's emulation on a CPU without bf16 units) stays inside them, while a wrong gradient stays far outside:
dropping one sequence's loss (what a masking bug does) moves this gradient by ~45%.
"""

from __future__ import annotations

import random

import pytest
import torch
import transformers

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.modeling import DecoderLayer
from toolrl_learner.train import precision
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.synthetic import group, trajectory
from toolrl_learner.train.trainer import Trainer

# SmolLM2-135M's family and traits at a test's size: Llama, head_dim 64, GQA 3:1, tied embeddings, rope 1e5.
SHAPE = dict(
    hidden_size=192,
    intermediate_size=512,
    num_hidden_layers=2,
    num_attention_heads=3,
    num_key_value_heads=1,
    vocab_size=4096,
    tie_word_embeddings=True,
    rope_theta=100000.0,
    rms_norm_eps=1e-5,
    max_position_embeddings=1024,
)
# (max |log-prob difference|, gradient relative L2 error, 1 - gradient cosine) allowed, by dtype.
TOLERANCE = {"fp32": (1e-4, 1e-5, 1e-9), "bf16": (0.1, 0.05, 5e-4)}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    cfg = transformers.LlamaConfig(**SHAPE)
    torch.manual_seed(0)
    hf = transformers.AutoModelForCausalLM.from_config(cfg)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in hf.named_parameters():
            # Larger than an init's 0.02 so the logits spread (log-probs from -1 to -15) and the gradient is not
            # that of a near-uniform softmax.
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(1 + 0.1 * noise if "norm" in name else 0.06 * noise)
    out = tmp_path_factory.mktemp("smollm2-shaped")
    hf.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def reference(model_dir):
    return _reference(model_dir, _groups(SHAPE["vocab_size"]))


def _groups(vocab: int):
    """Two GRPO groups of 4 samples sharing their group's prompt, multi-turn (a tool result between turns)."""
    rng = random.Random(1)
    groups = []
    for g in range(2):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(20, 40))]
        trajs = []
        for i in range(4):
            turns = [[rng.randrange(vocab) for _ in range(rng.randint(5, 30))] for _ in range(2)]
            tool = [[rng.randrange(vocab) for _ in range(rng.randint(3, 10))]]
            trajs.append(trajectory(prompt, turns, float((i + g) % 2), tool_results=tool))
        groups.append(group("prec", f"e0-p{g}", trajs))
    return groups


def _reference(model_dir, groups):
    """The plain step: HF LlamaForCausalLM in fp32, full logits, log_softmax + gather, the same GRPO token-mean
    on-policy loss. Returns (log-probs of the loss tokens in batch order, gradients by parameter name)."""
    hf = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).train()
    trajs = [t for g in groups for t in g["trajectories"]]
    rewards = torch.tensor([t["reward"] for t in trajs]).view(len(groups), -1)
    adv = ((rewards - rewards.mean(1, keepdim=True)) / (rewards.std(1, keepdim=True) + 1e-6)).flatten()
    n_tok = sum(sum(t["lossMask"][1:]) for t in trajs)
    logps = []
    for a, t in zip(adv.tolist(), trajs, strict=True):
        ids = torch.tensor([t["tokenIds"]])
        logp = torch.log_softmax(hf(input_ids=ids).logits[0, :-1].float(), -1)
        logp = logp.gather(1, ids[0, 1:, None]).squeeze(1)
        mask = torch.tensor(t["lossMask"][1:], dtype=torch.bool)
        loss = -(a * torch.exp(logp - logp.detach())[mask]).sum() / n_tok
        loss.backward()
        logps.append(logp[mask].detach())
    return torch.cat(logps), {n: p.grad for n, p in hf.named_parameters()}


def _ours(model_dir, groups, dtype: str, checkpointing: bool = False, kept: list | None = None):
    """toolrl's Trainer.step (lr 0, no clipping: the gradients stay as computed), with the training forward's
    log-probs recorded (and in `kept`, whether each forward's log-prob head kept its log-softmax for the
    backward). Small micro-batches and chunks so several of each run."""
    cfg = LearnerConfig(
        model_path=str(model_dir),
        dtype=dtype,
        lr=0.0,
        grad_clip=1e9,
        micro_batch_tokens=160,
        logprob_chunk_size=24,
        rollout_is="none",
        filter_groups=False,
        gradient_checkpointing=checkpointing,
    )
    policy = Policy(cfg, model_dir, torch.device("cpu"))
    trainer = Trainer(cfg, policy)
    assert trainer.share_prefix  # on a CPU a group's samples share their prompt's hidden states
    n_tok = sum(sum(t["lossMask"][1:]) for g in groups for t in g["trajectories"])
    logps = torch.full((n_tok,), float("nan"))
    forward = policy.forward

    def recorded(mb, **kw):
        out = forward(mb, **kw)
        logps[mb.token_index] = out.logprobs.detach()
        if kept is not None:
            kept.append(out.logprobs.grad_fn.kept is not None)  # the head's autograd node (model/logprobs.py)
        return out

    policy.forward = recorded
    trainer.step(groups, 0)
    return policy, logps, {n: p.grad for n, p in policy.base.named_parameters()}


def _compare(grads, ref_grads) -> tuple[float, float]:
    assert grads.keys() == ref_grads.keys()
    g = torch.cat([grads[n].flatten().double() for n in sorted(grads)])
    r = torch.cat([ref_grads[n].flatten().double() for n in sorted(grads)])
    rel = float((g - r).norm() / r.norm())
    cos = float(g @ r / (g.norm() * r.norm()))
    return rel, cos


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_learner_step_equals_the_fp32_hugging_face_step_within_tolerance_on_cpu(
    model_dir, reference, dtype, monkeypatch
):
    # bf16 runs as it does on a CPU with bf16 units; on one without, PyTorch emulates the same rounding.
    monkeypatch.setattr(precision, "cpu_bf16_unit", lambda: "AVX512-BF16")
    groups = _groups(SHAPE["vocab_size"])
    ref_logp, ref_grads = reference
    policy, logp, grads = _ours(model_dir, groups, dtype)
    assert policy.autocast_dtype == (torch.bfloat16 if dtype == "bf16" else None)
    assert not logp.isnan().any()
    assert ref_logp.max() - ref_logp.min() > 4  # the logits spread: not a near-uniform softmax
    lp_tol, rel_tol, cos_tol = TOLERANCE[dtype]
    assert float((logp - ref_logp).abs().max()) < lp_tol
    rel, cos = _compare(grads, ref_grads)
    assert rel < rel_tol, f"{dtype}: gradient relative error {rel:.2e} (allowed {rel_tol:.0e})"
    assert 1 - cos < cos_tol, f"{dtype}: gradient cosine {cos:.8f}"


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_gradient_checkpointing_recomputes_the_head_too_and_gives_the_same_step_on_cpu(
    model_dir, reference, dtype, monkeypatch
):
    # model.gradient_checkpointing recomputes in the backward each layer's activations and the log-prob head's
    # log-softmax (nothing [tokens x vocabulary] kept from the forward), under bf16 autocast without its weight-cast
    # cache in the forward and in the recompute alike (train/precision.py): the same numbers as the step without
    # it, up to summation order (measured: equal bit for bit), so within the reference's tolerances too.
    monkeypatch.setattr(precision, "cpu_bf16_unit", lambda: "AVX512-BF16")
    groups = _groups(SHAPE["vocab_size"])
    cache = []  # autocast's cache setting in every decoder layer's forward (the checkpointed ones and recomputes)
    layer_forward = DecoderLayer.forward

    def spy(self, *args, **kwargs):
        if torch.is_autocast_enabled("cpu"):
            cache.append(torch.is_autocast_cache_enabled())
        return layer_forward(self, *args, **kwargs)

    monkeypatch.setattr(DecoderLayer, "forward", spy)
    kept_plain: list[bool] = []
    _, logp_plain, grads_plain = _ours(model_dir, groups, dtype, kept=kept_plain)
    n_plain = len(cache)
    kept_ckpt: list[bool] = []
    _, logp, grads = _ours(model_dir, groups, dtype, checkpointing=True, kept=kept_ckpt)
    assert kept_plain and all(kept_plain)  # without checkpointing this small head keeps its log-softmax
    assert kept_ckpt and not any(kept_ckpt)
    if dtype == "bf16":
        n_layers = SHAPE["num_hidden_layers"]
        assert n_plain == n_layers * len(kept_plain)
        assert len(cache) - n_plain == 2 * n_layers * len(
            kept_ckpt
        )  # forward, then recompute in the backward
        assert not any(cache)
    torch.testing.assert_close(logp, logp_plain, rtol=0, atol=1e-6)
    rel, cos = _compare(grads, grads_plain)
    assert rel < 1e-6 and 1 - cos < 1e-9, f"{dtype}: checkpointing moved the gradient by {rel:.2e}"
    ref_logp, ref_grads = reference
    lp_tol, rel_tol, cos_tol = TOLERANCE[dtype]
    assert float((logp - ref_logp).abs().max()) < lp_tol
    rel, cos = _compare(grads, ref_grads)
    assert rel < rel_tol and 1 - cos < cos_tol


def test_the_comparison_catches_a_wrong_gradient_on_cpu(model_dir, reference, monkeypatch):
    # The bf16 bounds are loose enough for any CPU's rounding; a gradient with one sequence's loss dropped (what a
    # masking bug does) must still fail them.
    monkeypatch.setattr(precision, "cpu_bf16_unit", lambda: "AVX512-BF16")
    groups = _groups(SHAPE["vocab_size"])
    _, ref_grads = reference
    broken = [dict(g, trajectories=list(g["trajectories"])) for g in groups]
    t = dict(broken[0]["trajectories"][1])
    t["lossMask"] = [0] * len(t["lossMask"])
    broken[0]["trajectories"][1] = t
    _, _, grads = _ours(model_dir, broken, "bf16")
    rel, _ = _compare(grads, ref_grads)
    assert rel > 5 * TOLERANCE["bf16"][1]


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        ({"avx512_bf16": True, "amx_bf16": False, "cpu_name": "AMD EPYC 9R14"}, torch.bfloat16),  # Zen 4+
        # AMX: Intel Sapphire Rapids and later
        ({"avx512_bf16": True, "amx_bf16": True, "cpu_name": "Intel Xeon"}, torch.bfloat16),
        # AVX512-BF16 without AMX on an Intel core (Cooper Lake; AMX hidden by a hypervisor): slower than fp32
        ({"avx512_bf16": True, "amx_bf16": False, "cpu_name": "Intel Xeon"}, None),
        ({"avx512_bf16": True}, torch.bfloat16),  # a CPU torch does not name: its unit, as it says
        ({"avx512_bf16": False, "amx_bf16": False, "avx2": True}, None),  # no bf16 unit: fp32
        ({"architecture": "arm64", "bf16": True}, None),  # ARM's bf16: not measured, fp32
    ],
)
def test_bf16_autocast_only_on_cpus_whose_bf16_units_are_faster(caps, expected, monkeypatch):
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: caps)
    cpu = torch.device("cpu")
    assert precision.autocast_dtype("bf16", cpu) == expected
    assert precision.autocast_dtype("fp32", cpu) is None
    assert precision.autocast_dtype("bf16", torch.device("cuda", 0)) == torch.bfloat16
    said = precision.describe("bf16", cpu)
    assert ("bf16 autocast over fp32 master weights" in said) == (expected is not None)
    assert ("computing in fp32" in said) == (expected is None)
    assert ("without AMX is slower" in said) == (expected is None and bool(caps.get("avx512_bf16")))
    with pytest.raises(ValueError, match="model.dtype must be bf16 or fp32"):
        precision.autocast_dtype("fp16", cpu)
