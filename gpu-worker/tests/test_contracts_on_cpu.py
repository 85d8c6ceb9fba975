import pytest

from toolrl_learner.contracts import ContractError, validate


def _group(**over):
    traj = {
        "sampleIndex": 0,
        "tokenIds": [1, 2, 3],
        "promptLength": 2,
        "lossMask": [0, 0, 1],
        "behaviorLogprobs": [0.0, 0.0, -0.5],
        "policyVersions": [-1, -1, 0],
        "finishReason": "eos",
        "turns": [],
        "messages": [],
        "reward": 1.0,
        "rewardComponents": {"format": 1.0},
    }
    group = {
        "schemaVersion": 1,
        "runId": "r1",
        "groupId": "e0-p0",
        "promptId": "p0",
        "epoch": 0,
        "dataSource": "calc",
        "trajectories": [traj],
    }
    group.update(over)
    return group


def test_valid_group_passes_on_cpu():
    assert validate("scored-group", _group())["groupId"] == "e0-p0"


def test_error_names_the_failing_path_on_cpu():
    with pytest.raises(ContractError, match=r"scored-group: trajectories/0/finishReason"):
        g = _group()
        g["trajectories"][0]["finishReason"] = "bogus"
        validate("scored-group", g)


def test_camel_case_keys_are_required_on_cpu():
    g = _group()
    g["group_id"] = g.pop("groupId")
    with pytest.raises(ContractError, match="groupId"):
        validate("scored-group", g)
