"""Writes BFCL multi-turn entries as BFCL's own loader prepares them for a model (function docs of the
involved classes with BFCL's language hint, held-out functions moved to `missed_function` by turn) next to
their ground truth, in BFCL's file layout, for `toolrl dataset convert --from bfcl`."""

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

CATEGORIES = (
    "multi_turn_base",
    "multi_turn_miss_func",
    "multi_turn_miss_param",
    "multi_turn_long_context",
)


def export(categories: list[str], out_dir: str, ids: set[str] | None, limit: int | None) -> list[dict]:
    # BFCL's config module creates result/score folders under its project root on import: point it at scratch,
    # removed when the process ends (each conversion left an empty folder in the temp dir before).
    if "BFCL_PROJECT_ROOT" not in os.environ:
        scratch = tempfile.mkdtemp(prefix="bfcl-project-")
        atexit.register(shutil.rmtree, scratch, ignore_errors=True)
        os.environ["BFCL_PROJECT_ROOT"] = scratch
    from bfcl_eval.constants.category_mapping import VERSION_PREFIX
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    out = Path(out_dir)
    (out / "possible_answer").mkdir(parents=True, exist_ok=True)
    written = []
    found: set[str] = set()
    for category in categories:
        if category not in CATEGORIES:
            raise ValueError(f"unknown category {category!r}; choose from {', '.join(CATEGORIES)}")
        entries = load_dataset_entry(category)
        truths = {t["id"]: t for t in load_ground_truth_entry(category)}
        chosen = [e for e in entries if ids is None or e["id"] in ids]
        if limit is not None:
            chosen = chosen[:limit]
        found.update(e["id"] for e in chosen)
        if not chosen:
            continue
        name = f"{VERSION_PREFIX}_{category}.json"
        with open(out / name, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(e, ensure_ascii=False) + "\n" for e in chosen)
        with open(out / "possible_answer" / name, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(truths[e["id"]], ensure_ascii=False) + "\n" for e in chosen)
        written.append({"category": category, "file": str(out / name), "entries": len(chosen)})
    if ids is not None:
        missing = sorted(ids - found)
        if missing:
            raise ValueError(f"no entry with id {', '.join(missing)} in {', '.join(categories)}")
    return written
