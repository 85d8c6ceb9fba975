"""Scores a trajectory with BFCL's multi-turn checker: per user turn, and all turns together.

BFCL's `multi_turn_checker` stops at the first failing turn (its leaderboard metric is all-or-nothing). For
the progress reward every turn is checked on its own with BFCL's own sub-checks, in the same order and on
the same executions: after turn t, the model's instances (all its calls of turns 0..t, replayed from
`initial_config`) must equal the ground truth's (`state_checker`), and the ground truth's results of turn t
must all be among the model's results so far (`response_checker`). Turns whose ground truth is empty (the
model is expected to ask or decline: miss_param, miss_func) are not checked, as in BFCL. The binary success
is `multi_turn_checker` itself, plus BFCL's rule that a force-terminated episode fails.
"""

from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import (
    multi_turn_checker,
    response_checker,
    state_checker,
)
from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
    execute_multi_turn_func_call,
    is_empty_execute_response,
)

from .calls import CallError, parse_call_string, to_call_string
from .envs import Entry, new_token, release


def _turn_strings(entry: Entry, model_turns) -> tuple[list[list[list[str]]], int]:
    """Per turn, per step, the call strings; calls that cannot be built are dropped and counted."""
    methods = set(entry.methods())
    skipped = 0
    out = []
    if not isinstance(model_turns, list):
        raise CallError("modelTurns must be a list (turns) of lists (steps) of calls")
    for turn in model_turns:
        steps = []
        for step in turn or []:
            strings = []
            for call in step or []:
                try:
                    strings.append(to_call_string(call.get("name"), call.get("arguments") or {}, methods))
                except (CallError, AttributeError):
                    skipped += 1
            if strings:
                steps.append(strings)
        out.append(steps)
    return out, skipped


def check_ground_truth(entry: Entry, ground_truth) -> list[list[str]]:
    """The ground truth as call strings, each proven to be a literal call of one of the entry's functions."""
    if not isinstance(ground_truth, list) or not all(isinstance(t, list) for t in ground_truth):
        raise CallError("groundTruth must be a list (turns) of lists of call strings")
    methods = entry.methods()
    for t, turn in enumerate(ground_truth):
        for c in turn:
            if not isinstance(c, str):
                raise CallError(f"groundTruth[{t}] holds a {type(c).__name__}, not a call string")
            parse_call_string(c, methods)
    return ground_truth


def _execute(entry: Entry, strings: list[str], token: str) -> tuple[list[str], dict]:
    return execute_multi_turn_func_call(
        strings,
        entry.initial_config,
        list(entry.involved_classes),
        token,
        entry.id,
        long_context=entry.long_context,
        is_evaL_run=True,
    )


def per_turn(entry: Entry, model: list[list[list[str]]], ground_truth: list[list[str]]) -> list[dict]:
    """One result per ground-truth turn; turns the model never reached fail."""
    model_token, truth_token = new_token("model"), new_token("truth")
    results = []
    all_model_results: list[str] = []
    try:
        for t, truth_calls in enumerate(ground_truth):
            if t >= len(model):
                results.append(
                    {
                        "passed": False,
                        "check": "not_reached",
                        "message": "the episode ended before this turn",
                    }
                )
                continue
            model_instances = {}
            for step in model[t]:
                step_results, model_instances = _execute(entry, step, model_token)
                all_model_results.extend(step_results)
            truth_results, truth_instances = _execute(entry, truth_calls, truth_token)
            if not truth_calls:
                results.append({"passed": True, "check": "no_ground_truth", "message": ""})
                continue
            if not model[t] or is_empty_execute_response(model[t]):
                results.append(
                    {
                        "passed": False,
                        "check": "empty_turn_model_response",
                        "message": "no function call in this turn",
                    }
                )
                continue
            state = state_checker(model_instances, truth_instances)
            if not state["valid"]:
                results.append(
                    {
                        "passed": False,
                        "check": "instance_state_mismatch",
                        "message": state["error_message"],
                    }
                )
                continue
            response = response_checker(all_model_results, truth_results, t)
            if not response["valid"]:
                results.append(
                    {
                        "passed": False,
                        "check": "execution_response_mismatch",
                        "message": response["error_message"],
                    }
                )
                continue
            results.append({"passed": True, "check": "ok", "message": ""})
    finally:
        release(model_token)
        release(truth_token)
    return results


def score(entry: Entry, ground_truth, model_turns, force_terminated: bool) -> dict:
    truth = check_ground_truth(entry, ground_truth)
    model, skipped = _turn_strings(entry, model_turns)
    if len(model) > len(truth):
        raise CallError(f"modelTurns has {len(model)} turns but the ground truth has {len(truth)}")
    turns = per_turn(entry, model, truth)
    if force_terminated or len(model) != len(truth):
        success = {
            "valid": False,
            "errorType": "multi_turn:force_terminated",
            "message": f"the episode ended after {len(model)} of {len(truth)} turns or before its last turn finished",
        }
    else:
        token = new_token("check")
        try:
            verdict = multi_turn_checker(model, truth, entry.as_test_entry(), entry.category, token)
        except AssertionError as err:  # the checker asserts instance sets match; report rather than crash
            verdict = {
                "valid": False,
                "error_type": "multi_turn:checker_assertion",
                "error_message": str(err),
            }
        finally:
            release(token)
        success = {
            "valid": bool(verdict["valid"]),
            "errorType": verdict.get("error_type"),
            "message": verdict.get("error_message", ""),
        }
    return {"turns": turns, "success": success, "skippedCalls": skipped}
