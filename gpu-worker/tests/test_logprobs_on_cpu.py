"""Chunked log-probs equal full log-probs (values and gradients, in fp32 and under bf16 autocast within stated
tolerances); the `logprobs` command against transformers."""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from contextlib import redirect_stdout

import pytest
import torch
import transformers

from toolrl_learner.model.logprobs import token_logprobs
from toolrl_learner.model.logprobs_cli import main as logprobs_main
from toolrl_learner.model.tiny import TinySpec, build_tiny


def test_hand_computed_values_on_cpu():
    # hidden [1, 0] against rows [1, 0] and [0, 0]: logits z = [1, 0].
    # log p(0) = 1 - log(e + 1) = 1 - 1.313262 = -0.313262; p = [0.731059, 0.268941]
    # H = -(0.731059 * -0.313262 + 0.268941 * -1.313262) = 0.229015 + 0.353190 = 0.582203
    # At temperature 2, z = [0.5, 0]: log p(1) = 0 - log(e^0.5 + 1) = -log(2.648721) = -0.974077
    h = torch.tensor([[1.0, 0.0]])
    w = torch.tensor([[1.0, 0.0], [0.0, 0.0]])
    lp, ent = token_logprobs(h, w, torch.tensor([0]), return_entropy=True)
    assert lp.item() == pytest.approx(-0.313262, abs=1e-6)
    assert ent.item() == pytest.approx(0.582203, abs=1e-6)
    lp2, none = token_logprobs(h, w, torch.tensor([1]), temperature=2.0)
    assert lp2.item() == pytest.approx(-0.974077, abs=1e-6) and none is None


@pytest.mark.parametrize("chunk_size", [1, 7, 64, 4096])
def test_chunked_equals_full_values_and_gradients_on_cpu(chunk_size):
    gen = torch.Generator().manual_seed(0)
    t, hdim, v, tau = 50, 16, 300, 0.7
    h = torch.randn(t, hdim, generator=gen, requires_grad=True)
    w = torch.randn(v, hdim, generator=gen, requires_grad=True)
    tgt = torch.randint(0, v, (t,), generator=gen)
    g_lp, g_ent = torch.randn(t, generator=gen), torch.randn(t, generator=gen)

    logits = (h @ w.T) / tau
    ref_lp = logits.log_softmax(-1).gather(1, tgt[:, None]).squeeze(1)
    p = logits.softmax(-1)
    ref_ent = -(p * logits.log_softmax(-1)).sum(-1)
    ref_h, ref_w = torch.autograd.grad((ref_lp * g_lp).sum() + (ref_ent * g_ent).sum(), (h, w))

    lp, ent = token_logprobs(h, w, tgt, temperature=tau, chunk_size=chunk_size, return_entropy=True)
    torch.testing.assert_close(lp, ref_lp, atol=1e-5, rtol=1e-5)
    # Two float32 entropy formulas over 300 classes differ by summation order: values near log(300) ~ 5.7 agree
    # to a few float32 ulps, so 1e-5 absolute is tighter than the arithmetic (it failed on 1 element in 50).
    torch.testing.assert_close(ent, ref_ent, atol=5e-5, rtol=1e-5)
    got_h, got_w = torch.autograd.grad((lp * g_lp).sum() + (ent * g_ent).sum(), (h, w))
    torch.testing.assert_close(got_h, ref_h, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_w, ref_w, atol=1e-4, rtol=1e-4)


def _backward_ops(loss, inputs) -> tuple[tuple[torch.Tensor, ...], Counter]:
    """Gradients of loss, and how many times each aten op ran in the backward pass."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        grads = torch.autograd.grad(loss, inputs)
    return grads, Counter(e.name for e in prof.events() if e.name.startswith("aten::"))


def test_entropy_gradient_pass_runs_only_when_the_entropy_is_in_the_loss_on_cpu():
    # entropy_coeff = 0: the trainer asks for the entropy (a metric) but detaches it, so its gradient is
    # None and the backward must do exactly the log-prob-only work; entropy_coeff > 0 adds the entropy's.
    gen = torch.Generator().manual_seed(4)
    t, hdim, v, coeff = 12, 8, 40, 0.3
    h = torch.randn(t, hdim, generator=gen, requires_grad=True)
    w = torch.randn(v, hdim, generator=gen, requires_grad=True)
    tgt = torch.randint(0, v, (t,), generator=gen)

    lp_only, _ = token_logprobs(h, w, tgt, chunk_size=5)
    plain_grads, plain_ops = _backward_ops(lp_only.sum(), (h, w))

    lp, ent = token_logprobs(h, w, tgt, chunk_size=5, return_entropy=True)
    grads0, ops0 = _backward_ops((lp - 0.0 * ent.detach()).sum(), (h, w))  # entropy_coeff = 0
    for a, b in zip(grads0, plain_grads, strict=True):
        assert torch.equal(a, b)
    assert ops0 == plain_ops  # no entropy pass: the same kernels, as often

    lp, ent = token_logprobs(h, w, tgt, chunk_size=5, return_entropy=True)
    grads1, ops1 = _backward_ops((lp - coeff * ent).sum(), (h, w))  # entropy_coeff = 0.3
    logits = h @ w.T
    ref_lp = logits.log_softmax(-1).gather(1, tgt[:, None]).squeeze(1)
    ref_ent = -(logits.softmax(-1) * logits.log_softmax(-1)).sum(-1)
    ref = torch.autograd.grad((ref_lp - coeff * ref_ent).sum(), (h, w), retain_graph=True)
    for a, b in zip(grads1, ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert ops1["aten::sum"] > ops0["aten::sum"]  # the entropy pass ran (sum_v p log p per chunk)
    assert not torch.allclose(grads1[1], grads0[1])

    # the entropy alone (log-probs unused) still differentiates
    _, ent = token_logprobs(h, w, tgt, chunk_size=5, return_entropy=True)
    (g_h,) = torch.autograd.grad(ent.sum(), (h,))
    torch.testing.assert_close(g_h, torch.autograd.grad(ref_ent.sum(), (h,))[0], atol=1e-5, rtol=1e-5)


def test_gradient_through_logprobs_only_on_cpu():
    gen = torch.Generator().manual_seed(1)
    h = torch.randn(9, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(20, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    tgt = torch.randint(0, 20, (9,), generator=gen)
    assert torch.autograd.gradcheck(lambda a, b: token_logprobs(a, b, tgt, chunk_size=4)[0], (h, w))


def test_runs_under_bf16_autocast_on_cpu():
    gen = torch.Generator().manual_seed(2)
    h = torch.randn(10, 32, generator=gen, requires_grad=True)
    w = torch.randn(50, 32, generator=gen, requires_grad=True)
    tgt = torch.randint(0, 50, (10,), generator=gen)
    ref, _ = token_logprobs(h, w, tgt)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lp, _ = token_logprobs(h, w, tgt, chunk_size=3)
    assert lp.dtype == torch.float32
    torch.testing.assert_close(lp, ref, atol=0.15, rtol=0.05)  # bf16 logits of magnitude ~10
    lp.sum().backward()
    assert h.grad.dtype == torch.float32 and w.grad.dtype == torch.float32


def test_bad_arguments_are_named_on_cpu():
    h, w = torch.zeros(3, 4), torch.zeros(5, 4)
    with pytest.raises(ValueError, match="targets must be"):
        token_logprobs(h, w, torch.zeros(2, dtype=torch.long))
    with pytest.raises(ValueError, match="temperature must be > 0"):
        token_logprobs(h, w, torch.zeros(3, dtype=torch.long), temperature=0)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(init_std=0.1, seed=3))


def _hf_reference(tiny_dir, ids: list[int], temperature: float) -> list[float]:
    """log p(ids[t] | ids[:t]) for t >= 1 from transformers' own model."""
    hf = transformers.AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.float32).eval()
    with torch.no_grad():
        logp = (hf(torch.tensor([ids])).logits[0] / temperature).log_softmax(-1)
    return [logp[t - 1, ids[t]].item() for t in range(1, len(ids))]


def _run(args: list[str]) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert logprobs_main(args) == 0
    return json.loads(buf.getvalue())


def test_cli_on_generate_output_on_cpu(tiny_dir, tmp_path):
    prompt, samples = [1, 40, 41, 42, 2], [[50, 51, 52], [60, 2]]
    ref = [_hf_reference(tiny_dir, prompt + s, 0.8)[len(prompt) - 1 :] for s in samples]
    doc = {
        "prompt_token_ids": prompt,
        "samples": [
            {
                "text": "",
                "token_ids": samples[0],
                "logprobs": [x + 1e-4 for x in ref[0]],
                "finish_reason": "length",
            },
            {"text": "", "token_ids": samples[1], "finish_reason": "eos"},
        ],
    }
    (tmp_path / "gen.json").write_text(json.dumps(doc))
    out = _run(
        ["--model", str(tiny_dir), "--input", str(tmp_path / "gen.json"), "--temperature", "0.8", "--json"]
    )
    assert [len(s["logprobs"]) for s in out["samples"]] == [3, 2]
    for got, want in zip(out["samples"], ref, strict=True):
        assert got["logprobs"] == pytest.approx(want, abs=1e-5)
    assert out["samples"][0]["maxAbsDiff"] == pytest.approx(1e-4, abs=2e-5)
    assert "maxAbsDiff" not in out["samples"][1]


def test_cli_on_multi_turn_trajectories_on_cpu(tiny_dir, tmp_path):
    # prompt (3) | sampled (2) | tool result (3) | sampled (2): only the sampled tokens are scored.
    ids = [1, 30, 31, 70, 71, 5, 80, 81, 90, 2]
    mask = [0, 0, 0, 1, 1, 0, 0, 0, 1, 1]
    full = [0.0] + _hf_reference(tiny_dir, ids, 1.0)
    want = [full[t] if m else 0.0 for t, m in enumerate(mask)]
    group = {"trajectories": [{"tokenIds": ids, "lossMask": mask, "behaviorLogprobs": want}]}
    (tmp_path / "group.json").write_text(json.dumps(group))
    out = _run(["--model", str(tiny_dir), "--input", str(tmp_path / "group.json"), "--json"])
    (sample,) = out["samples"]
    assert sample["logprobs"] == pytest.approx(want, abs=1e-5)
    assert sample["maxAbsDiff"] < 1e-5
    assert all(sample["logprobs"][t] == 0.0 for t, m in enumerate(mask) if not m)
    assert all(math.isfinite(x) and x < 0 for x, m in zip(sample["logprobs"], mask, strict=True) if m)


def test_cli_rejects_unknown_shapes_on_cpu(tiny_dir, tmp_path, capsys):
    (tmp_path / "bad.json").write_text(json.dumps({"something": 1}))
    with pytest.raises(SystemExit) as exc:
        logprobs_main(["--model", str(tiny_dir), "--input", str(tmp_path / "bad.json")])
    assert exc.value.code == 2
    assert "needs tokenIds and lossMask" in capsys.readouterr().err


def test_kept_log_softmax_gives_the_recomputed_values_and_gradients_on_cpu():
    # save_bytes=0 recomputes the logits in the backward (the large-vocabulary path); the default keeps this small
    # [T, V] log-softmax from the forward. Same chunks, same formulas: the results agree to rounding.
    gen = torch.Generator().manual_seed(1)
    h = torch.randn(40, 16, generator=gen, requires_grad=True)
    w = torch.randn(200, 16, generator=gen, requires_grad=True)
    tgt = torch.randint(0, 200, (40,), generator=gen)
    g_lp, g_ent = torch.randn(40, generator=gen), torch.randn(40, generator=gen)
    results = []
    for save_bytes in (0, 2**30):
        lp, ent = token_logprobs(
            h, w, tgt, temperature=0.7, chunk_size=16, return_entropy=True, save_bytes=save_bytes
        )
        results.append((lp, ent, *torch.autograd.grad((lp * g_lp).sum() + (ent * g_ent).sum(), (h, w))))
    for a, b in zip(*results, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("chunk_size", [16, 100, 1000])
@pytest.mark.parametrize("save_bytes", [0, 2**30])
def test_chunked_under_bf16_autocast_equals_the_full_computation_within_tolerance_on_cpu(
    chunk_size, save_bytes
):
    # The learner's bf16 path: the logits matmul in bf16 (as an lm_head Linear under autocast), softmax in fp32.
    # Against the full [T, V] computation under the same autocast, chunking changes only how rows are grouped:
    # measured (AMD EPYC) 2e-6 on log-probs, 4e-5 relative on the hidden states' gradient, up to 2e-3 on the
    # weight's (summed over chunks of bf16 products); bounds 50x, 25x and 5x those. Against fp32 logits, bf16's own
    # rounding (logits up to ~22 here): 0.05 on log-probs, 1% on gradients; bounds 3x.
    gen = torch.Generator().manual_seed(0)
    t, hdim, v = 100, 64, 4096
    h = torch.randn(t, hdim, generator=gen, requires_grad=True)
    w = (0.5 * torch.randn(v, hdim, generator=gen)).requires_grad_()
    tgt = torch.randint(0, v, (t,), generator=gen)
    g_lp, g_ent = torch.randn(t, generator=gen), torch.randn(t, generator=gen)

    def full(bf16: bool):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            z = (h @ w.T).float()
        logp = z.log_softmax(-1)
        return logp.gather(1, tgt[:, None]).squeeze(1), -(logp.exp() * logp).sum(-1)

    def grads(lp, ent):
        return torch.autograd.grad((lp * g_lp).sum() + (ent * g_ent).sum(), (h, w))

    def rel(a, b):
        return float((a - b).norm() / b.norm())

    ref32_lp, ref32_ent = full(False)
    ref32_grads = grads(ref32_lp, ref32_ent)
    ref_lp, ref_ent = full(True)
    ref_grads = grads(ref_lp, ref_ent)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        lp, ent = token_logprobs(h, w, tgt, chunk_size=chunk_size, return_entropy=True, save_bytes=save_bytes)
    assert lp.dtype == ent.dtype == torch.float32
    got = grads(lp, ent)
    assert float((lp - ref_lp).abs().max()) < 1e-4
    assert float((ent - ref_ent).abs().max()) < 1e-3
    assert rel(got[0], ref_grads[0]) < 1e-3 and rel(got[1], ref_grads[1]) < 1e-2
    assert float((lp - ref32_lp).abs().max()) < 0.15
    assert rel(got[0], ref32_grads[0]) < 0.03 and rel(got[1], ref32_grads[1]) < 0.03
