"""Prepares raw BFCL multi-turn entries (as BFCL's data files hold them: no function docs, held-out functions named
in `missed_function`) the way BFCL's own loader does before inference: the involved classes' function docs with
BFCL's language hint in `function`, held-out functions moved to `missed_function` as docs, by turn. For
`toolrl dataset convert --from bfcl` on entries that lack `function`."""

import os
import tempfile


def prepare(entries: list[dict]) -> list[dict]:
    # BFCL's config module creates result/score folders under its project root on import: point it at scratch.
    with tempfile.TemporaryDirectory(prefix="bfcl-project-") as scratch:
        os.environ.setdefault("BFCL_PROJECT_ROOT", scratch)
        from bfcl_eval.constants.executable_backend_config import (
            MULTI_TURN_FUNC_DOC_FILE_MAPPING,
        )
        from bfcl_eval.utils import (
            add_language_specific_hint_to_function_doc,
            is_multi_turn,
            populate_test_cases_with_predefined_functions,
        )

    held_out: dict[str, dict[str, list[str]]] = {}
    for entry in entries:
        entry_id = entry.get("id")
        # BFCL decides by the id whether an entry is multi-turn (and so gets its classes' docs).
        if not isinstance(entry_id, str) or not is_multi_turn(entry_id):
            raise ValueError(f"entry {entry_id!r}: not a multi-turn id (multi_turn_<category>_<n>)")
        unknown = [
            c for c in entry.get("involved_classes") or [] if c not in MULTI_TURN_FUNC_DOC_FILE_MAPPING
        ]
        if unknown:
            raise ValueError(
                f"entry {entry_id}: unknown involved class {', '.join(map(str, unknown))}; "
                f"BFCL's classes: {', '.join(sorted(MULTI_TURN_FUNC_DOC_FILE_MAPPING))}"
            )
        held_out[entry_id] = {
            turn: list(names) for turn, names in (entry.get("missed_function") or {}).items()
        }

    entries = populate_test_cases_with_predefined_functions(entries)
    # BFCL's loader skips a held-out name no class has; say so instead of losing the function silently.
    for entry in entries:
        for turn, names in held_out[entry["id"]].items():
            found = {doc["name"] for doc in entry["missed_function"][turn]}
            absent = [n for n in names if n not in found]
            if absent:
                raise ValueError(
                    f"entry {entry['id']}: missed_function[{turn}] names {', '.join(map(str, absent))}, "
                    "which none of its involved classes has"
                )
    return add_language_specific_hint_to_function_doc(entries)
