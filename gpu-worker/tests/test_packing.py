"""Sequence packing and the packed forward: micro-batches respect the token budget, attention stays
within each sequence, and chunked log-probs of packed sequences equal full-logit log-probs of each
sequence run alone."""

import pytest
import torch

from toolrl_learner.config import LearnerConfig
from toolrl_learner.model.tiny import TinySpec, build_tiny
from toolrl_learner.train.batch import LearnerBatch
from toolrl_learner.train.packing import pack_batch, plan_micro_batches
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
