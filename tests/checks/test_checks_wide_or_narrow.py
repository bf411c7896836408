"""Checkers of book/04_wide_or_narrow.md (mha.checks.wide_or_narrow): head_entropy, ex-role-partner (which
role should share a head with the part of speech at h = 2) and ex-single-head-mat (the single map of the
roles layer, row of "mat")."""

import numpy as np
import pytest

import mha
from mha.checks import check, wide_or_narrow
from mha.checks.wide_or_narrow import role_partner, single_head_mat
from _verdicts import status_of as _status, wrong as _wrong


# ---- ex-role-partner ------------------------------------------------------------------------

def _reordered_pos_weight(order, h=2):
    """The learner's way: reorder the blocks of W^Q, W^K, W^V (and the rows of W^O), run the layer at h."""
    ex = mha.examples.cat_sat_mat()
    cols = np.concatenate([np.arange(8 * b, 8 * b + 8) for b in order])
    W_Q, W_K, W_V, W_O = ex.weights
    steps = mha.attention_steps(ex.X, W_Q[:, cols], W_K[:, cols], W_V[:, cols], W_O[cols], h=h)
    head = order.index(1) * 8 // (32 // h)
    return steps, mha.head_roles.role_mass(steps.weights[head], mha.head_roles.role_keys(ex)[1])


def test_role_partner_reference_agrees_with_the_library_and_is_accepted():
    ref = role_partner()
    kept = {p: _reordered_pos_weight([1, p] + [b for b in (0, 2, 3) if b != p])[1] for p in (0, 2, 3)}
    assert ref["partner"] == "same word" and ref["weight"] == pytest.approx(kept[2])
    assert kept[2] > max(kept[0], kept[3]) + 0.4          # the answer is not a close call
    assert check("ex-role-partner", ref).ok
    assert check("ex-role-partner", {"partner": "Same Word", "weight": round(ref["weight"], 2)}).ok


def test_reordering_the_blocks_changes_nothing_at_h_1():
    ex = mha.examples.cat_sat_mat()
    one = mha.attention_steps(ex.X, *ex.weights, h=1)
    steps, _ = _reordered_pos_weight([1, 2, 0, 3], h=1)
    assert np.allclose(steps.weights, one.weights) and np.allclose(steps.output, one.output)


@pytest.mark.parametrize("answer, phrase", [
    ({"partner": "neighbour", "weight": 0.94}, "keep less weight"),
    ({"partner": "sink", "weight": 0.94}, "keep less weight"),
    ({"partner": "part of speech", "weight": 0.94}, "one of the other three"),
    ({"partner": "verbs", "weight": 0.94}, "not one of the four roles"),
    ({"partner": 2, "weight": 0.94}, "as text"),
    ({"weight": 0.94}, "no 'partner' key"),
    ({"partner": "same word", "weight": _reordered_pos_weight([0, 1, 2, 3])[1]}, "page's own order"),
    ({"partner": "same word", "weight": _reordered_pos_weight([1, 2, 0, 3], h=4)[1]}, "head of h = 4"),
    ({"partner": "same word", "weight": _reordered_pos_weight([1, 2, 0, 3], h=1)[1]}, "single map"),
    ({"partner": "same word", "weight": 0.919}, "same word keys"),
    ({"partner": "same word", "weight": 0.12}, "other head"),
    ({"partner": "same word", "weight": 0.99}, "√8"),
    ({"partner": "same word", "weight": 0.817}, "√32"),
    ({"partner": "same word", "weight": 7.53}, "more than 1"),
    ({"partner": "same word", "weight": 0.9}, "rounded to 1 decimal"),
    ({"partner": "same word", "weight": 0.6}, "too small"),
    ({"partner": "same word", "weight": [0.9, 0.9]}, "one number"),
])
def test_role_partner_names_mistakes(answer, phrase):
    verdict = check("ex-role-partner", answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message
    assert "0.94" not in verdict.message  # never the expected answer


def test_role_partner_unfinished_and_junk():
    assert check("ex-role-partner", {"partner": ..., "weight": ...}).status == "not done"
    for junk in (None, "same word", [1, 2], {"partner": "word", "weight": "x"},
                 {"partner": "word", "weight": np.nan}, {"partner": None, "weight": 0.9}):
        assert check("ex-role-partner", junk).status in ("wrong", "not done")


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
# ex-single-head-mat (mha.checks.wide_or_narrow): the single map of the roles layer, row of "mat".
# ===============================================================================================
LABEL = "ex-single-head-mat"
MAT, DOT = 6, 7


def _mat_row(h, d_k, head):
    """The row of "mat" in head ``head`` of ``h`` heads, divided by sqrt(d_k), and the roles' key masks."""
    ex = mha.examples.cat_sat_mat()
    Q, K = ex.X @ ex.W_Q, ex.X @ ex.W_K
    cols = slice(head * (32 // h), (head + 1) * (32 // h))
    return mha.softmax(Q[MAT, cols] @ K[:, cols].T / np.sqrt(d_k)), mha.head_roles.role_keys(ex)


def _neighbour_mass(h, d_k, head):
    w, keys = _mat_row(h, d_k, head)
    return float(w[keys[0][MAT]].sum())


def test_reference_agrees_with_the_library_and_is_accepted():
    ex = mha.examples.cat_sat_mat()
    ref = single_head_mat()
    single = mha.attention_steps(ex.X, *ex.weights, h=1).weights[0, MAT]
    keys = mha.head_roles.role_keys(ex)
    assert ref["role"] == "neighbour" and ref["weight"] == pytest.approx(single[keys[0][MAT]].sum())
    # the point of the exercise: "." leads the row, yet the sink is not the leading role
    assert single.argmax() == DOT and keys[0][MAT, DOT] and ref["weight"] > single[DOT] + 0.012
    assert check(LABEL, ref).ok
    assert check(LABEL, {"role": "Neighbours", "weight": round(ref["weight"], 2)}).ok


@pytest.mark.parametrize("answer, phrase", [
    ({"role": "delimiter sink", "weight": 0.84}, "sink's keys are"),
    ({"role": "same word", "weight": 0.84}, "less of mat's row"),
    ({"role": "pos", "weight": 0.84}, "less of mat's row"),
    ({"role": "neighbor", "weight": float(_mat_row(1, 32, 0)[0][DOT])}, "on \".\" alone"),
    ({"role": "neighbor", "weight": float(_mat_row(1, 32, 0)[0][5])}, "on \"warm\" alone"),
    ({"role": "neighbour", "weight": _neighbour_mass(1, 8, 0)}, "√8"),
    ({"role": "neighbour", "weight": _neighbour_mass(1, 1, 0)}, "not divided"),
    ({"role": "neighbour", "weight": _neighbour_mass(4, 8, 0)}, "neighbour head of h = 4"),
    ({"role": "neighbour", "weight": _neighbour_mass(2, 16, 0)}, "head 1 of h = 2"),
    ({"role": "neighbour", "weight": 1.5}, "more than 1"),
    ({"role": "neighbour", "weight": 0.2}, "too small"),
    ({"role": "verbs", "weight": 0.84}, "not one of the four roles"),
    ({"role": 3, "weight": 0.84}, "as text"),
    ({"weight": 0.84}, "no 'role' key"),
])
def test_known_mistakes_are_named(answer, phrase):
    verdict = check(LABEL, answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message
    assert "0.84" not in verdict.message  # never the expected answer


def test_unfinished_and_junk():
    assert check(LABEL, {"role": ..., "weight": ...}).status == "not done"
    for junk in (None, "sink", [1, 2], {"role": "neighbour", "weight": "x"},
                 {"role": "neighbour", "weight": np.nan}):
        assert check(LABEL, junk).status in ("wrong", "not done")
