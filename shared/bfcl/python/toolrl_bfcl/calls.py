"""Tool calls as JSON (what the model writes) and as BFCL's call strings (what BFCL's executor evaluates).

BFCL runs calls with `eval`, so every string handed to it is built here from checked parts: a function
name that is a public method of the entry's classes, identifier keyword names and Python literals (repr of
JSON values). Call strings that come from data (the ground truth) must parse as exactly that shape too.
"""

import ast
import inspect
import keyword
import math
import re

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class CallError(ValueError):
    """A call that cannot be turned into a safe BFCL call string; the message names what is wrong."""


def _check_value(value, where: str):
    if value is None or isinstance(value, (bool, int, str)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CallError(f"{where} is {value}, which has no literal form")
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_value(item, f"{where}[{i}]")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CallError(f"{where} has a non-string key")
            _check_value(item, f"{where}.{key}")
        return
    raise CallError(f"{where} is a {type(value).__name__}, not a JSON value")


def to_call_string(name: str, arguments: dict, methods: set[str]) -> str:
    """`cd(folder='document')` from `{"name": "cd", "arguments": {"folder": "document"}}`."""
    if not isinstance(name, str) or name not in methods:
        raise CallError(f"{name!r} is not a function of this entry's classes")
    if not isinstance(arguments, dict):
        raise CallError(f"{name}: arguments must be an object")
    parts = []
    for key, value in arguments.items():
        if not IDENTIFIER.match(key) or keyword.iskeyword(key):
            raise CallError(f"{name}: argument name {key!r} is not a Python identifier")
        _check_value(value, f"{name}: argument {key}")
        parts.append(f"{key}={value!r}")
    return f"{name}({', '.join(parts)})"


def parse_call_string(text: str, methods: dict[str, inspect.Signature]) -> dict:
    """`{"name", "arguments"}` from a ground-truth string such as `sort('final_report.pdf')`.

    Positional arguments are named by the method's signature. Anything but a call of a known method with
    literal arguments is refused, so data can never make BFCL's `eval` run code.
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as err:
        raise CallError(f"{text!r} is not a call: {err.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise CallError(f"{text!r} is not a plain function call")
    name = node.func.id
    if name not in methods:
        raise CallError(f"{text!r} calls {name}, which is not a function of this entry's classes")
    params = [p for p in methods[name].parameters if p != "self"]
    if len(node.args) > len(params):
        raise CallError(f"{text!r} passes {len(node.args)} positional arguments to {name}")
    arguments = {}
    try:
        for i, arg in enumerate(node.args):
            arguments[params[i]] = ast.literal_eval(arg)
        for kw in node.keywords:
            if kw.arg is None:
                raise CallError(f"{text!r} uses ** arguments")
            arguments[kw.arg] = ast.literal_eval(kw.value)
    except ValueError:
        raise CallError(f"{text!r} has an argument that is not a literal") from None
    return {"name": name, "arguments": _jsonable(arguments)}


def _jsonable(value):
    """Tuples become lists (JSON has no tuples; BFCL's functions take either)."""
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value
