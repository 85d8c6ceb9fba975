"""The learner's typed view of a scored group (toolrl_learner/scored_group.py) against the JSON Schema the zod
schema emits (shared/schemas/json/scored-group.schema.json, `npm run schemas:generate`): every field on both sides,
the same ones optional, the same enumerations and JSON types. A field added, renamed or retyped on one side fails
here."""

import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, get_args, get_origin, get_type_hints

import pytest

from toolrl_learner import scored_group

SCHEMA = Path(__file__).resolve().parents[2] / "shared" / "schemas" / "json" / "scored-group.schema.json"

_JSON_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean", type(None): "null"}


def _json_types(node: dict[str, Any]) -> set[str]:
    if "anyOf" in node:
        return set().union(*(_json_types(n) for n in node["anyOf"]))
    t = node.get("type")
    if t == "number" and isinstance(node.get("const"), int):
        return {"integer"}  # zod's z.literal(1)
    return {t} if isinstance(t, str) else set(t or [])


def _compare(path: str, hint: Any, node: dict[str, Any]) -> list[str]:
    """Where the annotation `hint` and the schema `node` disagree (nothing for `Any`)."""
    if hint is Any:
        return []
    if typing.is_typeddict(hint):
        return _compare_typed_dict(path, hint, node)
    origin, args = get_origin(hint), get_args(hint)
    if origin in (types.UnionType, typing.Union):
        want = set().union(*({_JSON_TYPES[a]} if a in _JSON_TYPES else set() for a in args))
        have = _json_types(node)
        return [] if want == have else [f"{path}: {sorted(want)} here, {sorted(have)} in the schema"]
    if origin is Literal:
        enum = node.get("enum")
        return [] if list(args) == enum else [f"{path}: Literal{list(args)} here, enum {enum} in the schema"]
    if origin is list:
        if _json_types(node) != {"array"}:
            return [f"{path}: a list here, {sorted(_json_types(node))} in the schema"]
        return _compare(f"{path}[]", args[0], node.get("items") or {})
    if origin is dict:
        return [] if _json_types(node) == {"object"} else [f"{path}: a dict here, not in the schema"]
    want = {_JSON_TYPES[hint]}
    if hint is float:
        want = {"number"}
    have = _json_types(node)
    return [] if want == have else [f"{path}: {sorted(want)} here, {sorted(have)} in the schema"]


def _compare_typed_dict(path: str, td: Any, node: dict[str, Any]) -> list[str]:
    hints = get_type_hints(td, include_extras=True)
    # NotRequired[...] (the TypedDict's own key sets miss it under `from __future__ import annotations`)
    optional = {k for k, h in hints.items() if get_origin(h) is NotRequired}
    hints = {k: get_args(h)[0] if k in optional else h for k, h in hints.items()}
    props = node.get("properties") or {}
    required = set(node.get("required") or [])
    out = [f"{path}.{k}: only here" for k in hints if k not in props]
    out += [f"{path}.{k}: only in the schema" for k in props if k not in hints]
    for k in hints:
        if k not in props:
            continue
        if (k not in optional) != (k in required):
            out.append(f"{path}.{k}: {'optional' if k in optional else 'required'} here only")
        out += _compare(f"{path}.{k}", hints[k], props[k])
    return out


def test_the_scored_group_type_matches_the_schema():
    schema = json.loads(SCHEMA.read_text())
    assert _compare_typed_dict("ScoredGroup", scored_group.ScoredGroup, schema) == []


def test_the_comparison_names_a_drifted_field():
    class Drifted(typing.TypedDict):
        runId: int
        extra: str
        split: Literal["train"]

    node = {
        "properties": {"runId": {"type": "string"}, "split": {"enum": ["train", "val"]}, "gone": {}},
        "required": ["runId"],
    }
    with pytest.raises(AssertionError):
        assert _compare_typed_dict("D", Drifted, node) == []
    assert sorted(_compare_typed_dict("D", Drifted, node)) == [
        "D.extra: only here",
        "D.gone: only in the schema",
        "D.runId: ['integer'] here, ['string'] in the schema",
        "D.split: Literal['train'] here, enum ['train', 'val'] in the schema",
        "D.split: required here only",
    ]
