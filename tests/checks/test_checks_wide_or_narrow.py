"""Checkers of book/04_wide_or_narrow.md (mha.checks.wide_or_narrow): head_entropy, the score variance,
and ex-single-head-cat (the single map of the roles layer, row of "cat")."""

import numpy as np
import pytest

import mha
from mha.checks import check, wide_or_narrow
from mha.checks.wide_or_narrow import score_variance, single_head_cat
from _verdicts import status_of as _status, wrong as _wrong


# ---- ex-score-variance ---------------------------------------------------------------------

def test_score_variance_reference_and_measured_values():
    ref = score_variance()
    assert ref == {"d_k": 64, "raw": 64.0, "scaled": 1.0}
    assert _status("ex-score-variance", ref).ok
    assert _status("ex-score-variance", {"d_k": 64, "raw": 62.9, "scaled": 0.98}).ok  # measured


def test_score_variance_matches_a_measurement():
    rng = np.random.default_rng(1)
    ref = score_variance()
    q, k = rng.standard_normal((2, 20_000, ref["d_k"]))
    raw = (q * k).sum(axis=1)
    assert abs(raw.var() / ref["raw"] - 1) < 0.05
    assert abs((raw / np.sqrt(ref["d_k"])).var() - ref["scaled"]) < 0.05


@pytest.mark.parametrize("edit, phrase", [
    ({"d_k": 256}, "model width"),
    ({"d_k": 4}, "number of heads"),
    ({"raw": 8}, "standard deviation"),
    ({"raw": 256}, "not d_model"),
    ({"raw": 1}, "variance after scaling"),
    ({"scaled": 0.25}, "sqrt(d_model)"),
    ({"scaled": 1 / 64}, "dividing by d_k"),
    ({"scaled": 8}, "not by sqrt(d_k)"),
    ({"scaled": 2}, "too large"),
    ({"d_k": [64, 64]}, "one number"),
])
def test_score_variance_names_mistakes(edit, phrase):
    verdict = _status("ex-score-variance", {**score_variance(), **edit})
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# ----------------------------------------------------------------------------- head_entropy

def entropy_learner(A):
    plogp = np.where(A > 0, A * np.log(np.where(A > 0, A, 1.0)), 0.0)
    return -plogp.sum(axis=-1).mean(axis=-1)


def test_entropy_accepts_the_reference_and_learner_solutions():
    assert check("ex-head-entropy", mha.head_entropy).ok
    assert check("ex-head-entropy", entropy_learner).ok
    assert check("ex-head-entropy", lambda A: -(A * np.log(A + 1e-12)).sum(-1).mean(-1)).ok


@pytest.mark.parametrize(
    ("func", "phrase"),
    [
        (lambda A: -(A * np.log(A)).sum(-1).mean(-1), "0·log 0 must count as 0"),
        (lambda A: entropy_learner(A) / np.log(2), "log base 2"),
        (lambda A: entropy_learner(A) / np.log(10), "log base 10"),
        (lambda A: -entropy_learner(A), "negative"),
        (lambda A: entropy_learner(A) * A.shape[-2], "added the entropies of the rows"),
        (lambda A: entropy_learner(A) / A.shape[-1], "averaged a·log a over the keys"),
        (lambda A: mha.stats.row_entropy(A), "one entropy per row"),
        (lambda A: entropy_learner(A).mean(-1), "averaged over the heads too"),
        (lambda A: -(A * np.log(np.where(A > 0, A, 1.0))).sum(-2).mean(-1), "summed down the columns"),
    ],
)
def test_entropy_names_each_classic_mistake(func, phrase):
    _wrong("ex-head-entropy", func, phrase)


def test_entropy_catches_a_function_that_changes_its_input():
    def in_place(A):
        A += 0.0
        A[..., 0, 0] = 1.0
        return entropy_learner(A)

    _wrong("ex-head-entropy", in_place, "changed its input `A` in place")


def test_entropy_messages_do_not_state_the_expected_values():
    for A, *_ in wide_or_narrow._entropy_cases():
        for value in np.ravel(mha.head_entropy(A)):
            for text in (f"{value:.2f}", f"{value:.3f}", f"{value:.3g}", f"{value:.4f}"):
                for func in (lambda A: np.zeros(A.shape[:-2]), lambda A: entropy_learner(A) + 0.01):
                    assert text not in check("ex-head-entropy", func).message

# ===============================================================================================
# ex-single-head-cat (mha.checks.wide_or_narrow): the single map of the roles layer, row of "cat".
# (formerly test_checks_wide_or_narrow_roles.py)
# ===============================================================================================
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
