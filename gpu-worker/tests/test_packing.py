"""Sequence packing and the packed forward: micro-batches respect the token budget, attention stays
within each sequence, and chunked log-probs of packed sequences equal full-logit log-probs of each
sequence run alone; a group packed under its shared prefix gives the same log-probs and gradients, and so does a
group whose repeated samples are packed once (`dedup`), and so do groups whose prompts begin alike packed with that
beginning once a micro-batch (`share_root`)."""

import random

import pytest
import torch

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.packing import (
    MIN_SHARED_PREFIX,
    Unit,
    batch_root,
    pack_batch,
    plan_micro_batches,
    plan_units,
)
from toolrl_learner.train.policy import Policy
from toolrl_learner.train.synthetic import group, random_group, trajectory


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny"), TinySpec(hidden_size=64, num_layers=2, num_heads=4))


def test_plan_respects_budget_first_fit_decreasing_on_cpu():
    # lengths 7, 5, 4, 3, 1 into budget 8: 7 -> bin A (1 left); 5 -> bin B (3 left); 4 -> bin C (4 left);
    # 3 -> B (0 left); 1 -> A. Bins: {0, 4}, {1, 3}, {2}
    assert plan_micro_batches([7, 5, 4, 3, 1], 8) == [[0, 4], [1, 3], [2]]
    # a sequence longer than the budget gets a micro-batch of its own
    assert plan_micro_batches([20, 3, 3], 8) == [[0], [1, 2]]
    with pytest.raises(ValueError, match="budget must be positive"):
        plan_micro_batches([1], 0)


def test_micro_batch_layout_on_cpu():
    # one trajectory: prompt [5, 6], turn [7, 8], tool [9], turn [10]; loss tokens are 7, 8, 10 at
    # positions 2, 3, 5, predicted by hidden rows 1, 2, 4
    g = group("r", "e0-p0", [trajectory([5, 6], [[7, 8], [10]], 1.0, tool_results=[[9]])])
    batch = LearnerBatch.from_groups([g], 0)
    (mb,) = pack_batch(batch, 64)
    assert mb.input_ids.tolist() == [5, 6, 7, 8, 9, 10]
    assert mb.position_ids.tolist() == [0, 1, 2, 3, 4, 5]
    assert mb.cu_seqlens.tolist() == [0, 6]
    assert mb.pred_rows.tolist() == [1, 2, 4]
    assert mb.targets.tolist() == [7, 8, 10]
    assert batch.behavior_logprobs.tolist() == [-1.0, -1.0, -1.0]


def test_packed_chunked_logprobs_equal_full_logits_per_sequence_on_cpu(tiny_dir):
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", logprob_chunk_size=7, temperature=0.7)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    groups = [
        random_group("r", f"e0-p{i}", vocab=900, g=3, prompt_len=5 + i, response_len=9, seed=i)
        for i in range(3)
    ]
    batch = LearnerBatch.from_groups(groups, 0)
    mbs = pack_batch(batch, 100)  # 9 sequences of 28-30 tokens: several sequences per micro-batch
    assert len(mbs) < batch.num_seqs and all(mb.num_tokens <= 100 for mb in mbs)
    packed = torch.zeros(batch.num_loss_tokens)
    entropy = torch.zeros(batch.num_loss_tokens)
    for mb in mbs:
        out = policy.forward_old(mb)
        packed[mb.token_index] = out.logprobs
        full = policy._forward(policy.base, mb, entropy=True, values=False)
        entropy[mb.token_index] = full.entropy
    # reference: each sequence alone, full [L, V] logits / temperature, log_softmax, gather
    for s, ids in enumerate(batch.token_ids):
        n = ids.shape[0]
        cu = torch.tensor([0, n], dtype=torch.int32)
        with torch.no_grad():
            logits = policy.base.forward(ids, torch.arange(n), cu) / 0.7  # [L, V]
        logp = torch.log_softmax(logits, -1)
        pos = batch.loss_positions[s]
        expected = logp[pos - 1].gather(1, ids[pos][:, None]).squeeze(1)
        ent = -(logp[pos - 1].exp() * logp[pos - 1]).sum(-1)
        lo, hi = int(batch.tok_offsets[s]), int(batch.tok_offsets[s + 1])
        torch.testing.assert_close(packed[lo:hi], expected, rtol=0, atol=2e-5)
        torch.testing.assert_close(entropy[lo:hi], ent, rtol=0, atol=2e-5)


def test_shared_prefix_layout_on_cpu():
    # Two samples of one 8-token prompt, both starting with sampled token 7: the unit is the 9 shared tokens, then
    # each sample's own. Sample 0: [p..., 7, 8], tool [9], [10]; sample 1: [p..., 7, 11].
    prompt = list(range(20, 20 + MIN_SHARED_PREFIX))
    g = group(
        "r",
        "e0-p0",
        [
            trajectory(prompt, [[7, 8], [10]], 1.0, tool_results=[[9]]),
            trajectory(prompt, [[7, 11]], 0.0),
        ],
    )
    batch = LearnerBatch.from_groups([g], 0)
    assert plan_units(batch, [0, 1], 64, share_prefix=True) == [Unit((0, 1), MIN_SHARED_PREFIX + 1)]
    (mb,) = pack_batch(batch, 64, share_prefix=True)
    p = MIN_SHARED_PREFIX
    assert mb.input_ids.tolist() == prompt + [7, 8, 9, 10, 11]
    assert mb.position_ids.tolist() == list(range(p + 1)) + [p + 1, p + 2, p + 3, p + 1]
    assert mb.branch is not None and mb.branch.tolist() == [-1] * (p + 1) + [0, 0, 0, 1]
    assert mb.cu_seqlens.tolist() == [0, p + 5]
    # Loss tokens: sample 0's 7, 8, 10 (rows p-1 shared, p, p+2), sample 1's 7, 11 (rows p-1 and p: the shared 7).
    assert mb.pred_rows.tolist() == [p - 1, p, p + 2, p - 1, p]
    assert mb.targets.tolist() == [7, 8, 10, 7, 11]
    assert mb.local_seq_ids.tolist() == [0, 0, 0, 1, 1]
    # Below the threshold nothing is shared; without share_prefix neither.
    short = group("r", "e0-p1", [trajectory([1, 2], [[7]], 1.0), trajectory([1, 2], [[8]], 0.0)])
    b2 = LearnerBatch.from_groups([short], 0)
    assert plan_units(b2, [0, 1], 64, share_prefix=True) == [Unit((0,)), Unit((1,))]
    assert pack_batch(batch, 64)[0].branch is None


def _logprobs_and_grads(policy, batch, mbs, budget):
    """The batch's log-probs and the gradient of their sum through micro-batches `mbs` (each within `budget`
    tokens), and the tokens packed."""
    assert all(mb.num_tokens <= budget for mb in mbs)
    policy.base.zero_grad(set_to_none=True)
    out = torch.zeros(batch.num_loss_tokens)
    for mb in mbs:
        lp = policy.forward(mb, entropy=False).logprobs
        lp.sum().backward()
        out[mb.token_index] = lp.detach()
    grads = {n: p.grad.clone() for n, p in policy.base.named_parameters() if p.grad is not None}
    return out, grads, sum(mb.num_tokens for mb in mbs)


def test_shared_prefix_gives_the_same_logprobs_and_gradients_on_cpu(tiny_dir):
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", logprob_chunk_size=7, temperature=0.7)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    groups = [
        random_group("r", f"e0-p{i}", vocab=900, g=4, prompt_len=20 + 3 * i, response_len=9, seed=i)
        for i in range(3)
    ]
    batch = LearnerBatch.from_groups(groups, 0)

    def run(share: bool, budget: int):
        return _logprobs_and_grads(policy, batch, pack_batch(batch, budget, share_prefix=share), budget)

    alone, g_alone, t_alone = run(False, 400)
    for budget in (400, 90):  # one unit per group, and groups split into units that repeat the prefix
        shared, g_shared, t_shared = run(True, budget)
        assert t_shared < t_alone
        torch.testing.assert_close(shared, alone, rtol=0, atol=2e-5)
        for n, g in g_alone.items():
            torch.testing.assert_close(g_shared[n], g, rtol=1e-4, atol=1e-5)


def _repeating_group(group_id: str, seed: int, prompt_len: int = 20):
    """Six samples of one random prompt, of three kinds of token sequence: samples 0, 2 and 5 the same, 1 and 4
    the same, 3 on its own. Rewards alternate, so samples with the same tokens have different advantages."""
    rng = random.Random(seed)
    prompt = [rng.randrange(900) for _ in range(prompt_len)]
    kinds = [
        (
            [[rng.randrange(900) for _ in range(n)], [rng.randrange(900) for _ in range(4)]],
            [[rng.randrange(900)] * 3],
        )
        for n in (9, 6, 11)
    ]
    order = [0, 1, 0, 2, 1, 0]
    return group(
        "r",
        group_id,
        [
            trajectory(prompt, kinds[k][0], float(i % 2), tool_results=kinds[k][1], sample_index=i)
            for i, k in enumerate(order)
        ],
    )


def test_repeated_samples_are_packed_once_on_cpu():
    batch = LearnerBatch.from_groups([_repeating_group("e0-p0", 0)], 0)
    # Without a shared prefix (as on CUDA): one unit per distinct sequence, the repeats its copies.
    assert plan_units(batch, list(range(6)), 400, share_prefix=False, dedup=True) == [
        Unit((0,), copies=((2, 0), (5, 0))),
        Unit((1,), copies=((4, 1),)),
        Unit((3,)),
    ]
    # Under the shared prompt: the three distinct samples are the branches.
    (unit,) = plan_units(batch, list(range(6)), 400, share_prefix=True, dedup=True)
    assert unit.seqs == (0, 1, 3) and unit.copies == ((2, 0), (5, 0), (4, 1)) and unit.prefix >= 20
    for share in (False, True):
        (plain,) = pack_batch(batch, 400, share_prefix=share)
        (once,) = pack_batch(batch, 400, share_prefix=share, dedup=True)
        lengths = batch.lengths
        copied = (
            lengths[2] + lengths[4] + lengths[5]
            if not share
            else lengths[2] + lengths[4] + lengths[5] - 3 * unit.prefix
        )
        assert once.num_tokens == plain.num_tokens - copied
        # Every loss token is still there, once, each read from the row of the first copy of its sequence.
        assert sorted(once.token_index.tolist()) == list(range(batch.num_loss_tokens))
        assert once.num_seqs == 6 and sorted(once.seq_index.tolist()) == list(range(6))
        row = {int(t): int(r) for t, r in zip(once.token_index, once.pred_rows, strict=True)}
        off = batch.tok_offsets
        for copy, first in ((2, 0), (5, 0), (4, 1)):
            n = int(off[copy + 1] - off[copy])
            assert [row[int(off[copy]) + j] for j in range(n)] == [row[int(off[first]) + j] for j in range(n)]
        assert once.targets.tolist() == batch.targets[once.token_index].tolist()
        # The head runs once a distinct (row, target) pair, fewer than the loss tokens; each token maps to its own.
        assert plain.head_index is None and once.head_index is not None
        assert once.head_rows is not None and once.head_targets is not None
        pairs = list(zip(once.head_rows.tolist(), once.head_targets.tolist(), strict=True))
        assert len(set(pairs)) == len(pairs) < once.pred_rows.numel()
        assert once.head_rows[once.head_index].tolist() == once.pred_rows.tolist()
        assert once.head_targets[once.head_index].tolist() == once.targets.tolist()


def test_repeated_samples_packed_once_give_the_same_logprobs_and_gradients_on_cpu(tiny_dir):
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", logprob_chunk_size=7, temperature=0.7)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    batch = LearnerBatch.from_groups([_repeating_group(f"e0-p{i}", i, 20 + 3 * i) for i in range(3)], 0)
    # A weight for each loss token, so that copies' tokens pull on their shared rows with different strengths.
    weight = torch.linspace(-1.0, 2.0, batch.num_loss_tokens)

    def run(share: bool, dedup: bool, budget: int):
        mbs = pack_batch(batch, budget, share_prefix=share, dedup=dedup)
        assert all(mb.num_tokens <= budget for mb in mbs)
        policy.base.zero_grad(set_to_none=True)
        out, ent = torch.zeros(batch.num_loss_tokens), torch.zeros(batch.num_loss_tokens)
        for mb in mbs:
            fo = policy.forward(mb, entropy=True)
            assert fo.entropy is not None
            (fo.logprobs * weight[mb.token_index] + 0.1 * fo.entropy).sum().backward()
            out[mb.token_index] = fo.logprobs.detach()
            ent[mb.token_index] = fo.entropy.detach()
        grads = {n: p.grad.clone() for n, p in policy.base.named_parameters() if p.grad is not None}
        return out, ent, grads, sum(mb.num_tokens for mb in mbs)

    alone, e_alone, g_alone, t_alone = run(False, False, 400)
    for share, budget in ((False, 400), (True, 400), (True, 60)):
        once, e_once, g_once, t_once = run(share, True, budget)
        assert t_once < run(share, False, budget)[3] <= t_alone
        torch.testing.assert_close(once, alone, rtol=0, atol=2e-5)
        torch.testing.assert_close(e_once, e_alone, rtol=0, atol=2e-5)
        for n, g in g_alone.items():
            torch.testing.assert_close(g_once[n], g, rtol=1e-4, atol=1e-5)


def test_root_layout_on_cpu():
    # Two groups whose prompts begin with the same 8 tokens (a system prompt) and then differ: with share_root the
    # micro-batch packs those 8 once (branch -2), then each group's unit holds only what follows them.
    root = list(range(30, 30 + MIN_SHARED_PREFIX))
    r = MIN_SHARED_PREFIX
    g0 = group(
        "r", "e0-p0", [trajectory(root + [1, 2], [[7, 8]], 1.0), trajectory(root + [1, 2], [[9]], 0.0)]
    )
    g1 = group("r", "e0-p1", [trajectory(root + [3], [[5, 6]], 1.0)])
    batch = LearnerBatch.from_groups([g0, g1], 0)
    assert batch_root(batch, [0, 1, 2]) == r and batch_root(batch, [0]) == 0
    (plain,) = pack_batch(batch, 64, share_prefix=True)
    (mb,) = pack_batch(batch, 64, share_prefix=True, share_root=True)
    assert plain.num_tokens == (r + 2) + 3 + (r + 3) and mb.num_tokens == plain.num_tokens - r
    # Group 0's unit: its prefix after the root ([1, 2]), branches [7, 8] and [9]; group 1: a lone sequence [3, 5, 6].
    assert mb.input_ids.tolist() == root + [1, 2, 7, 8, 9, 3, 5, 6]
    assert mb.position_ids.tolist() == list(range(r)) + [r, r + 1, r + 2, r + 3, r + 2, r, r + 1, r + 2]
    assert mb.branch is not None and mb.branch.tolist() == [-2] * r + [-1, -1, 0, 0, 1, -1, -1, -1]
    assert mb.cu_seqlens.tolist() == [0, r, r + 5, r + 8]
    # Loss tokens 7, 8 (rows: group 0's prefix end, then its branch 0), 9 (the prefix end), 5, 6 (group 1's own).
    assert mb.pred_rows.tolist() == [r + 1, r + 2, r + 1, r + 5, r + 6]
    assert mb.targets.tolist() == [7, 8, 9, 5, 6]
    # Without share_prefix there is no root either; a budget the root fills leaves it out.
    assert pack_batch(batch, 64, share_root=True)[0].branch is None
    assert all((m.branch is None or int(m.branch[0]) != -2) for m in pack_batch(batch, r, True, False, True))


def test_root_gives_the_same_logprobs_and_gradients_on_cpu(tiny_dir):
    cfg = LearnerConfig(model_path=str(tiny_dir), dtype="fp32", logprob_chunk_size=7, temperature=0.7)
    policy = Policy(cfg, tiny_dir, torch.device("cpu"))
    rng = random.Random(5)
    system = [rng.randrange(900) for _ in range(24)]
    groups = []
    for i in range(4):  # every prompt begins with the same 24 tokens, as a system prompt does
        prompt = system + [rng.randrange(900) for _ in range(6 + i)]
        trajs = [
            trajectory(
                prompt,
                [[rng.randrange(900) for _ in range(7)] for _ in range(2)],
                float(j % 2),
                tool_results=[[rng.randrange(900) for _ in range(4)]],
            )
            for j in range(3)
        ]
        groups.append(group("r", f"e0-p{i}", trajs))
    batch = LearnerBatch.from_groups(groups, 0)
    assert batch_root(batch, list(range(batch.num_seqs))) == len(system)

    def run(root: bool, budget: int):
        mbs = pack_batch(batch, budget, share_prefix=True, dedup=False, share_root=root)
        return (*_logprobs_and_grads(policy, batch, mbs, budget), len(mbs))

    plain, g_plain, t_plain, _ = run(False, 400)
    for budget in (400, 120):  # one micro-batch, and several that each pack the root once
        rooted, g_rooted, t_rooted, n = run(True, budget)
        assert t_rooted == t_plain - (len(groups) - n) * len(system)
        torch.testing.assert_close(rooted, plain, rtol=0, atol=2e-5)
        for name, g in g_plain.items():
            torch.testing.assert_close(g_rooted[name], g, rtol=1e-4, atol=1e-5)
