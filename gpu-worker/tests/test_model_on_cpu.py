"""CausalLM against transformers' own Llama / Qwen2 / Qwen3 on random weights, packed sequences, autocast, peft."""

from __future__ import annotations

import pytest
import torch
import transformers

from toolrl_learner.model.attention import block_causal_mask, packed_causal_attention
from toolrl_learner.model.config import ModelConfig
from toolrl_learner.model.hf_io import load_pretrained
from toolrl_learner.model.modeling import CausalLM, init_weights, pack

BASE = dict(
    hidden_size=64,
    intermediate_size=96,
    num_hidden_layers=2,
    num_attention_heads=4,
    vocab_size=200,
    rms_norm_eps=1e-6,
    max_position_embeddings=512,
)
# Each case exercises one family trait: Qwen2's q/k/v bias with tied embeddings and GQA 4:2; Llama untied with
# one KV head and Llama 3.1 RoPE scaling; Qwen3's q/k norms with a head_dim that is not hidden/heads; Llama with
# attention and MLP biases.
CASES = {
    "qwen2-tied-gqa": ("qwen2", dict(num_key_value_heads=2, tie_word_embeddings=True, rope_theta=1e6)),
    "llama-untied-mqa-llama3rope": (
        "llama",
        dict(
            num_key_value_heads=1,
            tie_word_embeddings=False,
            rope_parameters={
                "rope_type": "llama3",
                "rope_theta": 500000.0,
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 64,
            },
        ),
    ),
    "qwen3-qknorm": ("qwen3", dict(num_key_value_heads=2, head_dim=24, tie_word_embeddings=True)),
    "llama-biases": ("llama", dict(num_key_value_heads=4, attention_bias=True, mlp_bias=True)),
}
HF_CLASSES = {"llama": "LlamaConfig", "qwen2": "Qwen2Config", "qwen3": "Qwen3Config"}


def make_hf_model(model_type: str, overrides: dict, seed: int = 0):
    """A transformers model with every parameter random (biases and norm gains too, so none is a no-op)."""
    cfg = getattr(transformers, HF_CLASSES[model_type])(**BASE, **overrides)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg).eval()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(1 + 0.1 * noise if "norm" in name else 0.08 * noise)
    return model


@pytest.fixture(params=sorted(CASES))
def hf_and_ours(request, tmp_path):
    model_type, overrides = CASES[request.param]
    hf = make_hf_model(model_type, overrides)
    hf.save_pretrained(tmp_path)
    return hf, load_pretrained(tmp_path).eval()


def test_packed_forward_matches_transformers_on_cpu(hf_and_ours):
    hf, ours = hf_and_ours
    gen = torch.Generator().manual_seed(1)
    seqs = [torch.randint(0, 200, (n,), generator=gen) for n in (7, 1, 13)]
    ids, pos, cu = pack(seqs)
    with torch.no_grad():
        packed = ours(ids, pos, cu)  # [21, V]
        for s, seq in enumerate(seqs):
            ref = hf(seq[None]).logits[0]
            got = packed[cu[s] : cu[s + 1]]
            assert ref.abs().max() > 0.5, "logits too flat for the comparison to mean anything"
            torch.testing.assert_close(got, ref, atol=2e-5, rtol=1e-4)


def test_positions_beyond_original_context_match_on_cpu(hf_and_ours):
    # Llama 3.1 scaling only changes long wavelengths; positions up to 300 exercise them (original ctx 64).
    hf, ours = hf_and_ours
    seq = torch.randint(0, 200, (300,), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(
            ours.forward_batch(seq[None])[0], hf(seq[None]).logits[0], atol=5e-5, rtol=1e-4
        )


def test_config_reads_what_transformers_means_on_cpu(hf_and_ours):
    hf, ours = hf_and_ours
    c, h = ours.config, hf.config
    assert c.head_dim == getattr(h, "head_dim", h.hidden_size // h.num_attention_heads)
    assert c.tie_word_embeddings == h.tie_word_embeddings
    assert (ours.lm_head.weight is ours.model.embed_tokens.weight) == c.tie_word_embeddings
    assert c.num_parameters() == sum(p.numel() for p in ours.parameters())
    # Our inverse frequencies are transformers' (default and llama3 scaling).
    torch.testing.assert_close(ours.inv_freq, hf.model.rotary_emb.inv_freq, atol=0, rtol=1e-6)
    assert set(ours.state_dict()) == set(hf.state_dict())


def test_block_causal_mask_on_cpu():
    # Two sequences of lengths 2 and 3: token 2 starts the second one and must not see tokens 0-1.
    mask = block_causal_mask(torch.tensor([0, 2, 5]), 5).int().tolist()
    assert mask == [
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [0, 0, 1, 0, 0],
        [0, 0, 1, 1, 0],
        [0, 0, 1, 1, 1],
    ]


def test_packed_attention_equals_per_sequence_sdpa_on_cpu():
    gen = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(9, h, 8, generator=gen) for h in (4, 2, 2))
    cu = torch.tensor([0, 4, 9])
    out = packed_causal_attention(q, k, v, cu, backend="sdpa")
    for s in range(2):
        a, b = cu[s], cu[s + 1]
        ref = torch.nn.functional.scaled_dot_product_attention(
            q[a:b].transpose(0, 1),
            k[a:b].repeat_interleave(2, dim=1).transpose(0, 1),
            v[a:b].repeat_interleave(2, dim=1).transpose(0, 1),
            is_causal=True,
        ).transpose(0, 1)
        torch.testing.assert_close(out[a:b], ref)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="varlen (Flash) attention needs CUDA")
def test_varlen_backend_matches_sdpa_on_cuda():
    gen = torch.Generator(device="cuda").manual_seed(4)
    q, k, v = (torch.randn(300, h, 64, generator=gen, device="cuda", dtype=torch.bfloat16) for h in (8, 2, 2))
    cu = torch.tensor([0, 100, 101, 300], device="cuda")
    a = packed_causal_attention(q, k, v, cu, backend="varlen")
    b = packed_causal_attention(q, k, v, cu, backend="sdpa")
    torch.testing.assert_close(a.float(), b.float(), atol=2e-2, rtol=2e-2)


def _tiny_model(**over) -> CausalLM:
    cfg = ModelConfig.from_hf(
        {
            "model_type": "qwen2",
            **BASE,
            "num_key_value_heads": 2,
            "tie_word_embeddings": True,
            **over,
        }
    )
    model = CausalLM(cfg)
    init_weights(model, seed=5, std=0.1)
    return model


def test_gradient_checkpointing_gives_the_same_gradients_on_cpu():
    ids, pos, cu = pack([torch.arange(10), torch.arange(50, 56)])

    def grads(checkpointing: bool):
        model = _tiny_model().train()
        if checkpointing:
            model.gradient_checkpointing_enable()
        model(ids, pos, cu).logsumexp(-1).sum().backward()
        return {n: p.grad.clone() for n, p in model.named_parameters()}

    plain, ckpt = grads(False), grads(True)
    assert plain.keys() == ckpt.keys()
    for name in plain:
        torch.testing.assert_close(ckpt[name], plain[name], msg=name)


def test_bf16_autocast_with_fp32_params_on_cpu():
    model = _tiny_model().train()
    ids, pos, cu = pack([torch.arange(12)])
    with torch.no_grad():
        ref = model(ids, pos, cu)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(ids, pos, cu)
    assert out.dtype == torch.bfloat16
    # bf16 has 8 mantissa bits: expect ~1% agreement on logits of magnitude ~1.
    torch.testing.assert_close(out.float(), ref, atol=0.1, rtol=0.05)
    out.float().logsumexp(-1).sum().backward()
    assert all(p.grad is not None and p.grad.dtype == torch.float32 for p in model.parameters())


def test_peft_lora_targets_hf_module_names_on_cpu():
    peft = pytest.importorskip("peft")
    model = _tiny_model()
    lora = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    names = [n for n, p in lora.named_parameters() if p.requires_grad]
    assert len(names) == 2 * 2 * BASE["num_hidden_layers"]  # A and B for q and v in each layer
    assert all(("q_proj" in n or "v_proj" in n) and "lora_" in n for n in names)
    ids, pos, cu = pack([torch.arange(8)])
    base = lora.get_base_model()
    base(ids, pos, cu).sum().backward()
    assert all(p.grad is not None for n, p in lora.named_parameters() if p.requires_grad)


def test_bad_inputs_are_named_on_cpu():
    model = _tiny_model()
    with pytest.raises(ValueError, match="cu_seqlens must run from 0 to T=4"):
        model.forward_hidden(torch.arange(4), torch.arange(4), torch.tensor([0, 3]))
    with pytest.raises(ValueError, match="packed 1-D"):
        model.forward_hidden(
            torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long), torch.tensor([0, 6])
        )
    with pytest.raises(ValueError, match="model_type 'gpt2' is not supported"):
        ModelConfig.from_hf({"model_type": "gpt2", **BASE})
    with pytest.raises(ValueError, match="multiple of num_key_value_heads"):
        ModelConfig.from_hf({"model_type": "llama", **BASE, "num_key_value_heads": 3})


@pytest.mark.parametrize("backend", ["padded", "per_seq"])
def test_padded_and_per_sequence_backends_equal_the_dense_mask_with_gradients_on_cpu(backend):
    # Lengths 1, 5, 2 and 9: a one-token sequence, and the longest last, so the padded rows of the others are
    # most of their width. Grouped-query attention (4 query heads on 2 KV heads).
    gen = torch.Generator().manual_seed(5)
    cu = torch.tensor([0, 1, 6, 8, 17])
    q, k, v = (torch.randn(17, h, 8, generator=gen, requires_grad=True) for h in (4, 2, 2))
    g = torch.randn(17, 4, 8, generator=gen)
    ref = packed_causal_attention(q, k, v, cu, backend="sdpa")
    ref_grads = torch.autograd.grad((ref * g).sum(), (q, k, v))
    out = packed_causal_attention(q, k, v, cu, max_seqlen=9, backend=backend)
    grads = torch.autograd.grad((out * g).sum(), (q, k, v))
    torch.testing.assert_close(out, ref)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b)


def test_auto_backend_is_the_padded_one_on_cpu_and_unknown_names_are_refused():
    gen = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(6, 2, 4, generator=gen) for _ in range(3))
    cu = torch.tensor([0, 2, 6])
    assert torch.equal(
        packed_causal_attention(q, k, v, cu, backend="auto"),
        packed_causal_attention(q, k, v, cu, backend="padded"),
    )
    with pytest.raises(ValueError, match="unknown attention backend 'flash'"):
        packed_causal_attention(q, k, v, cu, backend="flash")


def test_shared_prefix_units_equal_the_dense_tree_mask_with_gradients_on_cpu():
    # One micro-batch of three units: a 5-token prefix with branches of 3, 1 and 4 tokens; a lone 6-token sequence;
    # a 2-token prefix with branches of 2 and 5. The split computation (shared tokens, then the branches batched over
    # their unit's prefix) must give the one masked row's values and gradients.
    gen = torch.Generator().manual_seed(7)
    units = [(5, [3, 1, 4]), (6, []), (2, [2, 5])]
    branch, pos, cu = [], [], [0]
    for prefix, branches in units:
        branch += [-1] * prefix
        pos += list(range(prefix))
        for b, n in enumerate(branches):
            branch += [b] * n
            pos += list(range(prefix, prefix + n))
        cu.append(len(branch))
    branch, pos, cu = torch.tensor(branch), torch.tensor(pos), torch.tensor(cu)
    t = len(branch)
    q, k, v = (torch.randn(t, h, 8, generator=gen, requires_grad=True) for h in (4, 2, 2))
    g = torch.randn(t, 4, 8, generator=gen)
    ref = packed_causal_attention(q, k, v, cu, backend="sdpa", branch=branch, positions=pos)
    ref_grads = torch.autograd.grad((ref * g).sum(), (q, k, v))
    out = packed_causal_attention(q, k, v, cu, max_seqlen=12, branch=branch, positions=pos)
    grads = torch.autograd.grad((out * g).sum(), (q, k, v))
    torch.testing.assert_close(out, ref)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b)
    # and a branch token's output is the plain causal attention of [prefix; its branch]
    rows = list(range(0, 5)) + list(range(8, 9))  # unit 0's prefix and its branch 1 (one token)
    alone = packed_causal_attention(q[rows], k[rows], v[rows], torch.tensor([0, 6]), backend="sdpa")
    torch.testing.assert_close(out[8], alone[5])


def test_rooted_micro_batch_equals_the_dense_tree_mask_with_gradients_on_cpu():
    # A 6-token root (branch -2) every unit sees, then: a unit with a 3-token prefix and branches of 2, 1 and 4; a
    # lone 5-token sequence; a unit whose prefix is the root itself (no shared tokens of its own), branches 3 and 2.
    # The split computation (root, shared tokens over the root, branches over root and prefix) must give the one
    # masked [T, T] row's values and gradients; positions continue after the root.
    gen = torch.Generator().manual_seed(11)
    root = 6
    branch, pos, cu = [-2] * root, list(range(root)), [0, root]
    for prefix, branches in [(3, [2, 1, 4]), (5, []), (0, [3, 2])]:
        branch += [-1] * prefix
        pos += list(range(root, root + prefix))
        for b, n in enumerate(branches):
            branch += [b] * n
            pos += list(range(root + prefix, root + prefix + n))
        cu.append(len(branch))
    branch, pos, cu = torch.tensor(branch), torch.tensor(pos), torch.tensor(cu)
    t = len(branch)
    q, k, v = (torch.randn(t, h, 8, generator=gen, requires_grad=True) for h in (4, 2, 2))
    g = torch.randn(t, 4, 8, generator=gen)
    ref = packed_causal_attention(q, k, v, cu, backend="sdpa", branch=branch, positions=pos)
    ref_grads = torch.autograd.grad((ref * g).sum(), (q, k, v))
    out = packed_causal_attention(q, k, v, cu, branch=branch, positions=pos)
    grads = torch.autograd.grad((out * g).sum(), (q, k, v))
    torch.testing.assert_close(out, ref)
    for a, b in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, b)
    # A branch token's output is the plain causal attention of [root; its unit's prefix; its branch], a lone
    # sequence's of [root; itself], and the root's of the root alone.
    first = root + 3  # unit 1's branches start here
    rows = list(range(root + 3)) + [first + 2]  # root, unit 1's prefix, its branch 1 (one token)
    alone = packed_causal_attention(q[rows], k[rows], v[rows], torch.tensor([0, len(rows)]), backend="sdpa")
    torch.testing.assert_close(out[first + 2], alone[-1])
    lone = list(range(root)) + list(range(int(cu[2]), int(cu[3])))
    alone = packed_causal_attention(q[lone], k[lone], v[lone], torch.tensor([0, len(lone)]), backend="sdpa")
    torch.testing.assert_close(out[int(cu[2]) : int(cu[3])], alone[root:])
    only = packed_causal_attention(q[:root], k[:root], v[:root], torch.tensor([0, root]), backend="sdpa")
    torch.testing.assert_close(out[:root], only)


def test_shared_prefix_gradients_repeat_bit_for_bit_on_cpu():
    # A prefix's keys and values are gathered once per branch, so their gradients sum many contributions per row.
    # That sum must be formed in the same order every time: PyTorch's CPU backward of `x[index]` adds duplicates
    # with atomic adds from several threads, in whatever order the threads reach them (different bits from one
    # call to the next at this size, idle or not), and a deterministic run then drifts apart from its own replay.
    gen = torch.Generator().manual_seed(9)
    # One unit: a 128-token prefix and 32 branches of 16, so both threads gather the prefix rows at once.
    prefix, n_branches, n = 128, 32, 16
    branch = torch.tensor([-1] * prefix + [b for b in range(n_branches) for _ in range(n)])
    pos = torch.tensor(list(range(prefix)) + list(range(prefix, prefix + n)) * n_branches)
    t = len(branch)
    cu = torch.tensor([0, t])
    q0, k0, v0 = (torch.randn(t, h, 64, generator=gen) for h in (6, 3, 3))
    g = torch.randn(t, 6, 64, generator=gen)
    seen = set()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # the race needs two threads; with one, any order repeats
    try:
        for _ in range(16):
            q, k, v = (x.clone().requires_grad_(True) for x in (q0, k0, v0))
            out = packed_causal_attention(q, k, v, cu, branch=branch, positions=pos)
            grads = torch.autograd.grad((out * g).sum(), (q, k, v))
            seen.add(tuple(x.numpy().tobytes() for x in grads))
    finally:
        torch.set_num_threads(threads)
    assert len(seen) == 1, f"{len(seen)} different gradients in 16 identical calls"


def test_attention_under_bf16_autocast_computes_in_fp32_on_cpu():
    # The CPU kernel is faster in fp32: bf16 inputs are upcast, the result is cast back; the same numbers as fp32
    # attention on the bf16-rounded inputs, computed the same way on the same machine.
    gen = torch.Generator().manual_seed(8)
    q, k, v = (torch.randn(12, h, 8, generator=gen).bfloat16() for h in (4, 2, 2))
    cu = torch.tensor([0, 5, 12])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = packed_causal_attention(q, k, v, cu)
    assert out.dtype == torch.bfloat16
    expected = packed_causal_attention(q.float(), k.float(), v.float(), cu).bfloat16()
    assert torch.equal(out, expected)
