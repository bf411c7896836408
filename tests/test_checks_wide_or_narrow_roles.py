"""ex-single-head-cat (mha.checks.wide_or_narrow): the single map of the roles layer, row of "cat"."""

import numpy as np
import pytest

import mha
from mha.checks import check
from mha.checks.wide_or_narrow import single_head_cat

LABEL = "ex-single-head-cat"


def _cat_dot(h, d_k, head):
    ex = mha.examples.cat_sat_mat()
    Q, K = ex.X @ ex.W_Q, ex.X @ ex.W_K
    cols = slice(head * (32 // h), (head + 1) * (32 // h))
    return float(mha.softmax(Q[1, cols] @ K[:, cols].T / np.sqrt(d_k))[7])


def test_reference_agrees_with_the_library_and_is_accepted():
    ref = single_head_cat()
    single = mha.attention_steps(mha.examples.cat_sat_mat().X, *mha.examples.cat_sat_mat().weights, h=1)
    assert ref["role"] == "delimiter sink" and ref["weight"] == pytest.approx(single.weights[0, 1, 7])
    assert check(LABEL, ref).ok
    assert check(LABEL, {"role": "Sink", "weight": round(ref["weight"], 2)}).ok


@pytest.mark.parametrize("answer, phrase", [
    ({"role": "same word", "weight": 0.45}, "less of cat's row"),
    ({"role": "neighbor", "weight": 0.45}, "less of cat's row"),
    ({"role": "sink", "weight": _cat_dot(1, 8, 0)}, "√8"),
    ({"role": "sink", "weight": _cat_dot(1, 1, 0)}, "not divided"),
    ({"role": "sink", "weight": _cat_dot(4, 8, 3)}, "sink head of h = 4"),
    ({"role": "sink", "weight": _cat_dot(2, 16, 1)}, "head 2 of h = 2"),
    ({"role": "sink", "weight": 0.2}, "too small"),
    ({"role": "verbs", "weight": 0.45}, "not one of the four roles"),
    ({"role": 3, "weight": 0.45}, "as text"),
    ({"weight": 0.45}, "no 'role' key"),
])
def test_known_mistakes_are_named(answer, phrase):
    verdict = check(LABEL, answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message
    assert "0.45" not in verdict.message  # never the expected answer


def test_unfinished_and_junk():
    assert check(LABEL, {"role": ..., "weight": ...}).status == "not done"
    for junk in (None, "sink", [1, 2], {"role": "sink", "weight": "x"}, {"role": "sink", "weight": np.nan}):
        assert check(LABEL, junk).status in ("wrong", "not done")
