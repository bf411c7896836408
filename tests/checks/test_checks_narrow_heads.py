"""Checkers of book/05_narrow_heads.md (mha.checks.narrow_heads): exactly the queries that work pass."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.checks import check
from mha.checks.narrow_heads import weights_for_q


def status(label, answer):
    return check(label, answer).status


# ---- ex-q-love ---------------------------------------------------------------------------------

def love_boundary():
    """Where the weight of "love" crosses 0.95, found by bisection on the weights themselves."""
    lo, hi = -10.0, 0.0  # weight above 0.95 at lo, below at hi
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if weights_for_q(mid)[1] > 0.95 else (lo, mid)
    return (lo + hi) / 2


def test_love_weight_falls_as_q_grows():
    # The exercise says "love" passes 0.95 exactly when q is below one value: its weight must fall.
    w = weights_for_q(np.linspace(-20, 20, 4001))[:, 1]
    assert (np.diff(w) < 0).all()


@settings(max_examples=40, deadline=None)
@given(q=st.floats(-50.0, 50.0))
def test_q_love_accepts_exactly_the_boundary_to_two_decimals(q):
    assert (status("ex-q-love", q) == "correct") == (abs(q - love_boundary()) <= 0.005)


@pytest.mark.parametrize("answer", [-2.99, -2.993, np.float32(-2.99), [[-2.99]]])
def test_q_love_accepts_the_boundary(answer):
    v = check("ex-q-love", answer)
    assert v.status == "correct", v.message
    assert "2.993" not in v.message  # only the learner's own number, rounded, is echoed


@pytest.mark.parametrize("answer, words", [
    (2.0, "largest key wins"),
    (2.99, "largest key wins"),     # the boundary with the wrong sign
    (0.97, "looks like a weight"),
    (0, "each token gets a third"),
    (-1.0, "further from zero"),
    (-2.98, "further from zero"),
    (-3.0, "between -3 and 0"),     # a stop of the slider: above 0.95, but not the boundary
    (-5.0, "towards zero"),
    (-2.94, 'only "love" and "LLMs"'),   # ln(1/19): "I" left out of the softmax
    (-1.47, 'only "love" and "I"'),      # ln(1/19)/2: "LLMs" left out
    ([-4, -5], "one number"),
    (True, "truth value"),
    ("-3", "text"),
])
def test_q_love_names_mistakes(answer, words):
    v = check("ex-q-love", answer)
    assert v.status == "wrong" and words in v.message, v.message
    assert "2.99" not in v.message or answer in (2.99,), v.message  # never the boundary itself


# ---- ex-q-llms ---------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", ["impossible", "Impossible!", " none ", "No such q", "not possible"])
def test_q_llms_accepts_impossible(answer):
    v = check("ex-q-llms", answer)
    assert v.status == "correct" and "1/3" in v.message


@settings(max_examples=40, deadline=None)
@given(q=st.floats(-1e6, 1e6))
def test_q_llms_every_number_is_wrong_and_explained(q):
    v = check("ex-q-llms", q)
    assert v.status == "wrong" and 'gives "LLMs"' in v.message and "0.34" in v.message
    if abs(q) < 1:  # looked near the peak: the whole argument
        assert "no q exists" in v.message and "cosh" in v.message
    else:  # far from it: a hint, naming the token that leads, and not the proof
        assert "Hint" in v.message and "cosh" not in v.message
        assert ('"I" leads' in v.message) == (q > 0) and ('"love" leads' in v.message) == (q < 0)


@pytest.mark.parametrize("q, words", [
    (3.0, ['"I" leads', "positive q", "Try q = 0"]),
    (-2.0, ['"love" leads', "Hint"]),
    (0.0, ["tie", "0.333", "cosh", "no q exists"]),
    (0.4, ["cosh", "no q exists"]),
    ([5.0], ['"I" leads', "Hint"]),
])
def test_q_llms_hint_first_then_the_argument(q, words):
    v = check("ex-q-llms", q)
    assert v.status == "wrong" and all(w in v.message for w in words), v.message


def test_q_llms_search_reports_best_and_not_done_differs():
    v = check("ex-q-llms", np.linspace(-3, 3, 61))
    assert v.status == "wrong" and "of the 61 values" in v.message and "0.333" in v.message
    assert status("ex-q-llms", ...) == "not done"
    assert status("ex-q-llms", None) == "not done"


@pytest.mark.parametrize("answer, words", [
    ("maybe", "not a q"), (False, "truth value"), ([], "empty")])
def test_q_llms_other_answers(answer, words):
    v = check("ex-q-llms", answer)
    assert v.status == "wrong" and words in v.message


def test_no_q_passes_one_third():
    # The fact the checker relies on, checked independently on a fine grid.
    q = np.linspace(-20, 20, 40001)
    w = weights_for_q(q)[:, 2]
    assert w.max() == pytest.approx(1 / 3) and q[w.argmax()] == pytest.approx(0)
    winners = set(weights_for_q(q[np.abs(q) > 1e-9]).argmax(axis=1).tolist())
    assert winners == {0, 1}  # "I" or "love", never "LLMs"
