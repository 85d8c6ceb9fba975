"""Fast validation of a ScoredGroup against its contract.

jsonschema walks every element of the token arrays (seconds for a 40k-token group, longer than the
step that trains on it), so the schema checks the group with each token array cut to its first
element, and numpy checks the arrays whole: element types and ranges, and the equal lengths that
the zod schema's refinement requires (not expressible in JSON Schema).
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from ..contracts import ContractError, validate
from ..scored_group import ScoredGroup

TOKEN_ARRAYS = ("tokenIds", "lossMask", "behaviorLogprobs", "policyVersions")


def light_copy(group: dict[str, Any]) -> dict[str, Any]:
    """The group with every trajectory's token arrays cut to one element (what jsonschema gets to see)."""
    trajs = group.get("trajectories")
    if not isinstance(trajs, list):
        return group

    def cut(t: Any) -> Any:
        if not isinstance(t, dict):
            return t
        t = {**t, **{k: t[k][:1] for k in TOKEN_ARRAYS if isinstance(t.get(k), list)}}
        if isinstance(t.get("segments"), list):
            t["segments"] = [cut(s) for s in t["segments"]]
        return t

    return {**group, "trajectories": [cut(t) for t in trajs]}


def _array(t: dict[str, Any], key: str, where: str, dtype: type[np.floating]) -> np.ndarray:
    try:
        a = np.asarray(t[key], dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        raise ContractError(f"scored-group: {where}/{key}: not an array of numbers") from None
    if a.ndim != 1:
        raise ContractError(f"scored-group: {where}/{key}: not a flat array")
    return a


def check_scored_group(group: dict[str, Any]) -> ScoredGroup:
    """Raise ContractError naming the failing path; return the group unchanged, typed as what it now is."""
    validate("scored-group", light_copy(group))
    for i, t in enumerate(group["trajectories"]):
        _check_arrays(t, f"trajectories/{i}")
        for k, seg in enumerate(t.get("segments") or []):
            _check_arrays(seg, f"trajectories/{i}/segments/{k}")
    return cast(ScoredGroup, group)  # checked above against the contract


def _check_arrays(t: dict[str, Any], where: str) -> None:
    """A sequence's token arrays: equal lengths, integer ids, a 0/1 mask, finite log-probs, versions >= -1."""
    ids = _array(t, "tokenIds", where, np.float64)
    n = ids.shape[0]
    arrays = {"tokenIds": ids}
    for key in TOKEN_ARRAYS[1:]:
        arrays[key] = _array(t, key, where, np.float64)
        if arrays[key].shape[0] != n:
            raise ContractError(
                f"scored-group: {where}/{key}: has {arrays[key].shape[0]} entries, tokenIds {n}"
            )
    if n and ((ids < 0).any() or (ids != np.floor(ids)).any()):
        raise ContractError(f"scored-group: {where}/tokenIds: not all non-negative integers")
    if n and not np.isin(arrays["lossMask"], (0, 1)).all():
        raise ContractError(f"scored-group: {where}/lossMask: values other than 0 and 1")
    if n and not np.isfinite(arrays["behaviorLogprobs"]).all():
        raise ContractError(f"scored-group: {where}/behaviorLogprobs: not all finite numbers")
    pv = arrays["policyVersions"]
    if n and ((pv < -1).any() or (pv != np.floor(pv)).any()):
        raise ContractError(f"scored-group: {where}/policyVersions: not all integers >= -1")
    if t["promptLength"] > n:
        raise ContractError(f"scored-group: {where}/promptLength: {t['promptLength']} > {n} tokens")
