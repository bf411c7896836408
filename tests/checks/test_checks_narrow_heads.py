"""Checkers of book/05_narrow_heads.md (mha.checks.narrow_heads): exactly the queries that work pass."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.checks import check
from mha.checks.narrow_heads import LLMS_KEYS, weights_for_q


def status(label, answer):
    return check(label, answer).status


# ---- ex-q-love ---------------------------------------------------------------------------------

def love_boundary():
    """Where the weight of "love" crosses 0.9, found by bisection on the weights themselves."""
    lo, hi = -10.0, 0.0  # weight above 0.9 at lo, below at hi
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if weights_for_q(mid)[1] > 0.9 else (lo, mid)
    return (lo + hi) / 2


def test_love_weight_falls_as_q_grows():
    # The exercise says "love" passes 0.9 exactly when q is below one value: its weight must fall.
    w = weights_for_q(np.linspace(-20, 20, 4001))[:, 1]
    assert (np.diff(w) < 0).all()


@settings(max_examples=40, deadline=None)
@given(q=st.floats(-50.0, 50.0))
def test_q_love_accepts_exactly_the_boundary_to_two_decimals(q):
    assert (status("ex-q-love", q) == "correct") == (abs(q - love_boundary()) <= 0.005)


@pytest.mark.parametrize("answer", [-2.29, -2.293, np.float32(-2.29), [[-2.29]]])
def test_q_love_accepts_the_boundary(answer):
    v = check("ex-q-love", answer)
    assert v.status == "correct", v.message
    assert "2.293" not in v.message  # only the learner's own number, rounded, is echoed


def test_q_love_boundary_lies_between_the_slider_stops():
    # The slider's stops are 0.5 apart (-4 to 4); q* must be far from every stop, so that neither a
    # stop nor a straight line between two stops gives it to two decimals.
    q_star = love_boundary()
    stops = np.arange(-4.0, 4.01, 0.5)
    assert np.abs(stops - q_star).min() > 0.15
    lo, hi = -2.5, -2.0
    w_lo, w_hi = weights_for_q(lo)[1], weights_for_q(hi)[1]
    interpolated = lo + (w_lo - 0.9) / (w_lo - w_hi) * (hi - lo)
    assert status("ex-q-love", round(interpolated, 2)) == "wrong"


@pytest.mark.parametrize("answer, words", [
    (2.0, "largest key wins"),
    (2.29, "largest key wins"),     # the boundary with the wrong sign
    (0.97, "looks like a weight"),
    (0, "each token gets a third"),
    (-1.0, "further from zero"),
    (-2.28, "further from zero"),
    (-2.0, "further from zero"),    # a stop of the slider: below 0.9
    (-2.5, "between -2.5 and 0"),   # a stop of the slider: above 0.9, but not the boundary
    (-2.32, "between -2.32 and 0"), # a straight line between the two stops
    (-5.0, "towards zero"),
    (-2.20, 'only "love" and "LLMs"'),   # ln(1/9): "I" left out of the softmax
    (-1.10, 'only "love" and "I"'),      # ln(1/9)/2: "LLMs" left out
    ([-4, -5], "one number"),
    (True, "truth value"),
    ("-3", "text"),
])
def test_q_love_names_mistakes(answer, words):
    v = check("ex-q-love", answer)
    assert v.status == "wrong" and words in v.message, v.message
    assert "2.29" not in v.message or answer in (2.29,), v.message  # never the boundary itself


# ---- ex-q-llms ---------------------------------------------------------------------------------

def llms_peak():
    """The q where "LLMs" (keys (2, 0, 1.5)) does best, and its weight there, from a fine grid alone."""
    q = np.linspace(-5, 5, 1_000_001)
    w = weights_for_q(q, LLMS_KEYS)[:, 2]
    return float(q[w.argmax()]), float(w.max())


def test_llms_peak_is_off_zero_and_llms_never_leads():
    # The facts the exercise rests on: the peak has moved away from q = 0 and above 1/3, and even
    # there "LLMs" (the middle key) does not lead its row.
    q, w = llms_peak()
    assert 0.5 < q < 0.6 and 1 / 3 < w < 0.4
    assert weights_for_q(q, LLMS_KEYS).argmax() == 0


@pytest.mark.parametrize("answer", [
    {"q": 0.55, "weight": 0.363},
    {"q": np.log(3) / 2, "weight": weights_for_q(np.log(3) / 2, LLMS_KEYS)[2]},
    {"q": np.float32(0.549), "weight": np.float64(0.3630)},
])
def test_q_llms_accepts_the_peak(answer):
    v = check("ex-q-llms", answer)
    assert v.status == "correct", v.message


def test_q_llms_accepts_exactly_the_grid_peak_to_two_and_three_decimals():
    q, w = llms_peak()
    for dq in (-0.02, -0.0056, -0.0045, 0.0, 0.0045, 0.0056, 0.02):
        ok = check("ex-q-llms", {"q": q + dq, "weight": w}).status == "correct"
        assert ok == (abs(dq) < 0.005), dq
    for dw in (-0.002, -0.00056, -0.00045, 0.0, 0.00045, 0.00056, 0.002):
        ok = check("ex-q-llms", {"q": q, "weight": w + dw}).status == "correct"
        assert ok == (abs(dw) < 0.0005), dw


@pytest.mark.parametrize("answer, words", [
    ({"q": 0, "weight": 1 / 3}, "tokens tie"),                 # the page's peak, copied
    ({"q": 0.001, "weight": 0.34}, "not halfway"),
    ({"q": -0.55, "weight": 0.363}, "wrong sign"),
    ({"q": 1.10, "weight": 0.342}, "e^q = 3"),
    ({"q": 0.2, "weight": 0.35}, "too small"),
    ({"q": 2.0, "weight": 0.3}, "too large"),
    ({"q": 0.5, "weight": 0.363}, "rounded to 1 decimal"),
    ({"q": 0.55, "weight": 0.36}, "rounded to 2 decimals"),
    ({"q": 0.55, "weight": 0.3333}, "1/3 is the weight at q = 0"),
    ({"q": 0.55, "weight": 0.478}, 'weight of "I"'),
    ({"q": 0.55, "weight": 0.159}, 'weight of "love"'),
    ({"q": 0.55, "weight": 0.5}, "too large"),
    ({"q": "0.55", "weight": 0.363}, "text"),
    ({"q": 0.55, "weight": True}, "truth value"),
    ({"q": [0.5, 0.6], "weight": 0.363}, "one number"),
    ({"q": 0.55}, "no 'weight' key"),
    ("impossible", "give a dict"),
])
def test_q_llms_names_mistakes(answer, words):
    v = check("ex-q-llms", answer)
    assert v.status == "wrong" and words in v.message, v.message


@settings(max_examples=60, deadline=None)
@given(q=st.floats(-1e6, 1e6), w=st.floats(-2.0, 2.0))
def test_q_llms_never_gives_the_answer_away(q, w):
    v = check("ex-q-llms", {"q": q, "weight": w})
    if v.status != "correct":
        assert "0.55" not in v.message and "0.549" not in v.message and "0.363" not in v.message, v.message


def test_q_llms_not_done():
    assert status("ex-q-llms", ...) == "not done"
    assert status("ex-q-llms", {"q": ..., "weight": ...}) == "not done"
    assert status("ex-q-llms", {"q": 0.55, "weight": None}) == "not done"


def test_no_q_passes_one_third_with_the_page_keys():
    # The page's claim about the keys (2, 0, 1), checked independently on a fine grid.
    q = np.linspace(-20, 20, 40001)
    w = weights_for_q(q)[:, 2]
    assert w.max() == pytest.approx(1 / 3) and q[w.argmax()] == pytest.approx(0)
    winners = set(weights_for_q(q[np.abs(q) > 1e-9]).argmax(axis=1).tolist())
    assert winners == {0, 1}  # "I" or "love", never "LLMs"
