"""Finding user code: a dotted path importable from this interpreter (`my_pkg.tools.MyTool`, as verl's
`class_name`) or a name in a Python file (`path: tools/my_tool.py` + `name: MyTool`, as verl's
`custom_reward_function`)."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from typing import Any


class LoadError(Exception):
    """User code that cannot be found or imported; the message names what and where."""


def load_dotted(dotted: str) -> Any:
    module_name, _, attr = dotted.rpartition(".")
    if not module_name:
        raise LoadError(f"{dotted!r} is not a dotted path (module.Class)")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 (any import failure is the user's to read)
        raise LoadError(f"cannot import {module_name} for {dotted}: {type(e).__name__}: {e}") from e
    try:
        return getattr(module, attr)
    except AttributeError:
        raise LoadError(f"module {module_name} has no {attr!r}") from None


_file_modules: dict[str, Any] = {}


def load_from_file(path: str, name: str) -> Any:
    """`name` from the Python file at `path`, each file imported once under a name of its own (two files
    with the same stem never collide); its folder goes on sys.path so it can import its neighbours."""
    full = os.path.abspath(path)
    if not os.path.isfile(full):
        raise LoadError(f"{path}: no such file ({full})")
    module = _file_modules.get(full)
    if module is None:
        folder = os.path.dirname(full)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        stem = os.path.splitext(os.path.basename(full))[0]
        module_name = f"toolrl_user_{stem}_{hashlib.sha1(full.encode()).hexdigest()[:8]}"
        spec = importlib.util.spec_from_file_location(module_name, full)
        if spec is None or spec.loader is None:
            raise LoadError(f"{path} cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:  # noqa: BLE001
            del sys.modules[module_name]
            raise LoadError(f"importing {path} failed: {type(e).__name__}: {e}") from e
        _file_modules[full] = module
    try:
        return getattr(module, name)
    except AttributeError:
        defined = sorted(k for k in vars(module) if not k.startswith("_"))
        raise LoadError(
            f"{path} defines no {name!r} (it defines: {', '.join(defined[:20]) or 'nothing'})"
        ) from None
