"""Issue 31: every checker answers every junk answer with a specific verdict, within its time limit.

Junk answers: NaN, infinity, 1e308, None, text, booleans, the type ``dict``, dicts, huge integers, wrong
shapes, objects, and learner functions that never finish: one that sleeps, one with a bare ``except:``
inside a loop (it swallows every time-up it can), nested ones, and one that catches ``BaseException``
again and again. A verdict is specific when it is not the fallback "your answer could not be checked".

The four checker modules that other helpers own while issue 31 is open are held to "a verdict in time";
their fallback verdicts are listed (``xfail``), not asserted.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from mha.checks import check, checker_module, labels
from mha.checks.core import deadline

LIMIT = 0.3  # seconds: the learner's time limit here (and the checker's own)
SLACK = 4.0  # seconds a verdict may take beyond the limit on a busy machine (a full run at load 10 on 2 cores once needed more than 1.5)

OWNED_ELSEWHERE = {"mha.checks.how_many_heads"}  # one known fallback left: ex-lookup-variant with an edited LookupResult


def _bare_except_loop(*args, **kwargs):
    while True:
        try:
            time.sleep(0.02)
        except:  # noqa: E722 - the point: it swallows everything
            pass


def _nested_bare_excepts(*args, **kwargs):
    while True:
        try:
            try:
                while True:
                    pass
            except:  # noqa: E722
                pass
        except:  # noqa: E722
            pass


def _spin_swallowing():
    while True:
        try:
            pass
        except:  # noqa: E722
            pass


def _bare_excepts_in_two_frames(*args, **kwargs):
    while True:
        try:
            _spin_swallowing()
        except:  # noqa: E722
            pass


def _catches_base_exception(*args, **kwargs):
    caught = 0
    while caught < 60:
        try:
            time.sleep(10)
        except BaseException:
            caught += 1
    return np.zeros(3)


def _sleeps(*args, **kwargs):
    time.sleep(30)


ANSWERS = {
    "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "1e308": 1e308, "-1e308": -1e308,
    "tiny": 5e-324, "zero": 0, "-5": -5, "10**400": 10 ** 400, "-10**400": -10 ** 400, "True": True,
    "None": None, "text": "text", "empty text": "", "bytes": b"x", "empty list": [], "ragged": [[1], [1, 2]],
    "wrong shape": np.zeros((7, 7, 7)), "nan array": np.full(3, np.nan), "1e308 array": np.full((3, 3), 1e308),
    "dict type": dict, "empty dict": {}, "dict": {"a": 1}, "list type": list, "object": object(), "set": {1, 2},
    "complex": 1j, "returns nan": lambda *a, **k: float("nan"), "returns dict type": lambda *a, **k: dict,
    "returns 1e308": lambda *a, **k: np.full((4, 4), 1e308),
}
ENDLESS = {"bare except in a loop": _bare_except_loop, "nested bare excepts": _nested_bare_excepts,
           "bare excepts in two frames": _bare_excepts_in_two_frames,
           "catches BaseException": _catches_base_exception, "sleeps": _sleeps}


def _specific(label, verdict):
    if "could not be checked" in verdict.message and checker_module(label) in OWNED_ELSEWHERE:
        pytest.xfail(f"{checker_module(label)} (owned by another helper) gives the fallback verdict")
    return "could not be checked" not in verdict.message


@pytest.mark.parametrize("label", sorted(labels()))
def test_every_junk_answer_gets_a_specific_verdict(label):
    generic = []
    for name, answer in ANSWERS.items():
        start = time.perf_counter()
        verdict = check(label, answer, time_limit=LIMIT)
        took = time.perf_counter() - start
        assert verdict.status in ("wrong", "not done", "correct"), (name, verdict)
        assert verdict.message, (name, verdict)
        assert took < 2 * LIMIT + SLACK, f"{label}: {name} took {took:.1f} s"
        if "could not be checked" in verdict.message:
            generic.append(f"{name}: {verdict.message[:120]}")
    if generic and checker_module(label) in OWNED_ELSEWHERE:
        pytest.xfail(f"{checker_module(label)} (owned by another helper): " + "; ".join(generic))
    assert not generic, generic


CODE_LABELS = sorted(label for label, kind in labels().items() if kind == "code")


@pytest.mark.parametrize("name", sorted(ENDLESS))
@pytest.mark.parametrize("label", CODE_LABELS)
def test_learner_code_that_never_finishes_is_stopped_in_time(label, name):
    start = time.perf_counter()
    verdict = check(label, ENDLESS[name], time_limit=LIMIT)
    took = time.perf_counter() - start
    assert verdict.status == "wrong" and verdict.message
    assert took < 2 * LIMIT + SLACK, f"{label}: {name} took {took:.1f} s"


@pytest.mark.parametrize("limit", [1e308, 10 ** 400, float("inf"), 3600.5])
def test_a_huge_time_limit_is_cut_to_the_longest_allowed(limit):
    assert deadline.chosen_limit(limit, 3.0) == deadline.MAX_TIME_LIMIT
    verdict = check("ex-floor-distance", 5, time_limit=limit)
    assert verdict.status in ("wrong", "correct") and "could not be checked" not in verdict.message


def test_the_escalation_leaves_no_trace_function_behind():
    import sys

    before = sys.gettrace()
    check(CODE_LABELS[0], _bare_except_loop, time_limit=0.1)
    assert sys.gettrace() is before
    assert check(CODE_LABELS[0], lambda *a, **k: 1.0, time_limit=0.1).status == "wrong"  # a later check runs normally
