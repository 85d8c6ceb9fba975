"""Validation of what the learner reads against the JSON Schemas generated from the zod contracts, and the
cross-language constants generated beside them.

The TypeScript zod schemas in shared/schemas are the only definition; `npm run schemas:generate`
writes shared/schemas/json/*.schema.json and this module validates against those files, so the two
languages cannot drift. The same command writes constants.json (the bucket's key templates, the queue
attribute names, the group-id formats), which `constants()` reads. In the Docker image the files are
copied next to the package.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import validators
from jsonschema.protocols import Validator


class ContractError(ValueError):
    """A payload that does not match its contract; the message names the schema and the failing path."""


def timestamp() -> str:
    """Now, as the contracts' timestamps are written (JavaScript's Date.toISOString: UTC, milliseconds, Z)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _schema_dir() -> Path:
    env = os.environ.get("TOOLRL_SCHEMA_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for cand in (here.parent / "schemas", here.parents[2] / "shared" / "schemas" / "json"):
        if cand.is_dir():
            return cand
    raise FileNotFoundError("generated JSON Schemas not found; set TOOLRL_SCHEMA_DIR")


@cache
def constants() -> dict[str, Any]:
    """constants.json: `keys` and `ids` are `{name}` templates for str.format; `queueAttributes` are names."""
    return json.loads((_schema_dir() / "constants.json").read_text())


@cache
def _validator(name: str) -> Validator:
    schema = json.loads((_schema_dir() / f"{name}.schema.json").read_text())
    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def validate(name: str, payload: Any) -> Any:
    """Raise ContractError if `payload` does not match schema `name`; return it unchanged otherwise."""
    errors = sorted(_validator(name).iter_errors(payload), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        path = "/".join(str(p) for p in first.absolute_path) or "<root>"
        raise ContractError(f"{name}: {path}: {first.message} ({len(errors)} error(s))")
    return payload
