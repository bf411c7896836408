"""Checkers of book/11_induction_heads.md: accept the reference, name each classic mistake, survive junk."""

import numpy as np
import pytest

import mha
from mha import induction
from mha.checks.induction_heads import _cases, broken_toys, prefix_matching_reference, wrong_copy
from mha.heads import induction_scores
from _verdicts import status_of, wrong


def test_every_label_lives_in_the_chapters_module():
    for label in ("ex-break-toy", "ex-wrong-copy", "ex-prefix-matching"):
        assert mha.checks.checker_module(label) == "mha.checks.induction_heads"


# ---- ex-break-toy

def test_break_toy_reference_is_what_the_broken_toys_do():
    without, two_back, answer = broken_toys()
    assert answer == {"without_layer_1": 0, "two_back": 2}
    ids = induction.repeated_tokens(8, 12, seed=1)
    guess = induction.run(two_back, ids).logits.argmax(axis=-1)
    t = np.arange(8, 14)  # t + 2 inside the text
    np.testing.assert_array_equal(guess[t], ids[t + 2])
    assert induction.run(without, ids).X1[:, without.stream.previous].max() == 0


@pytest.mark.parametrize("answer", [{"without_layer_1": 0, "two_back": 2},
                                    {"without_layer_1": np.int64(0), "two_back": 2.0, "extra": 1}])
def test_break_toy_accepts_the_reference(answer):
    assert mha.checks.check("ex-break-toy", answer).ok


@pytest.mark.parametrize("answer, phrase", [
    ({"without_layer_1": 7, "two_back": 2}, "seen once or twice"),
    ({"without_layer_1": 0, "two_back": 1}, "that is the intact toy"),
    ({"without_layer_1": 0, "two_back": -1}, "after the current one"),
    ({"without_layer_1": 0, "two_back": 0}, "two places back"),
    ({"without_layer_1": 0, "two_back": -2}, "sign is flipped"),
    ({"without_layer_1": 3, "two_back": 2}, "'without_layer_1' is too large"),
    ({"without_layer_1": 0, "two_back": 5}, "'two_back' is too large"),
    ({"two_back": 2}, "no 'without_layer_1' key"),
    ([0, 2], "give a dict"),
])
def test_break_toy_names_each_mistake(answer, phrase):
    v = wrong("ex-break-toy", answer, phrase)
    assert "'two_back': 2" not in v.message


def test_break_toy_unfinished_is_not_done():
    assert status_of("ex-break-toy", {"without_layer_1": ..., "two_back": 2}).status == "not done"


# ---- ex-wrong-copy

def test_wrong_copy_reference_is_minus_the_mean():
    assert wrong_copy() == pytest.approx(-6.0 / 12, abs=0.01)  # scale 6 spread as a mean over 12 tokens


@pytest.mark.parametrize("answer", [wrong_copy(), -0.5, round(wrong_copy(), 2), np.float32(-0.498)])
def test_wrong_copy_accepts_the_reference(answer):
    verdict = mha.checks.check("ex-wrong-copy", answer)
    assert verdict.ok and "relative to the mean" in verdict.message


@pytest.mark.parametrize("answer, phrase", [
    (5.48, "intact layer 2"),
    (0.0, "subtracts the mean"),
    (-6.0, "not that token's logit"),
    (0.5, "check the sign"),
    (-2.0, "too small"),
    ([-0.5, 0.1], "one number"),
])
def test_wrong_copy_names_each_mistake(answer, phrase):
    v = wrong("ex-wrong-copy", answer, phrase)
    assert "0.50" not in v.message and "0.498" not in v.message


# ---- ex-prefix-matching

def test_prefix_matching_reference_agrees_with_the_library_on_a_repeated_block():
    A = _cases()[2][0]
    assert prefix_matching_reference(A, np.array([0, 1, 2, 3, 0, 1, 2, 3])) == pytest.approx(
        induction_scores(A[None, None], 4)[0, 0])


def _vectorised(A, ids):
    same = (ids[:, None] == ids[None, :]) & np.tri(len(ids), k=-1, dtype=bool)  # same[t, s]: s < t, same token
    after = np.zeros_like(same)
    after[:, 1:] = same[:, :-1]  # the key one place after each earlier occurrence
    has = same.any(axis=1)
    return (A * after).sum(axis=1)[has].mean()


def test_prefix_matching_accepts_the_reference_and_another_way():
    assert mha.checks.check("ex-prefix-matching", prefix_matching_reference).ok
    assert mha.checks.check("ex-prefix-matching", _vectorised).ok


def _every_query(A, ids):
    return np.mean([sum(A[t, s + 1] for s in range(t) if ids[s] == ids[t]) for t in range(len(ids))])


def _on_copy(A, ids):
    vals = [sum(A[t, s] for s in range(t) if ids[s] == ids[t]) for t in range(len(ids))
            if any(ids[s] == ids[t] for s in range(t))]
    return np.mean(vals)


def _latest(A, ids):
    vals = []
    for t in range(len(ids)):
        before = [s for s in range(t) if ids[s] == ids[t]]
        if before:
            vals.append(A[t, before[-1] + 1])
    return np.mean(vals)


def _mean_after(A, ids):
    vals = []
    for t in range(len(ids)):
        before = [s for s in range(t) if ids[s] == ids[t]]
        if before:
            vals.append(np.mean([A[t, s + 1] for s in before]))
    return np.mean(vals)


@pytest.mark.parametrize("func, phrase", [
    (_every_query, "averaged over every query"),
    (_on_copy, "earlier occurrences themselves"),
    (_latest, "only the latest"),
    (_mean_after, "Add them"),
    (lambda A, ids: prefix_matching_reference(A, ids) + 0.01, "the result for"),
    (lambda A, ids: [prefix_matching_reference(A, ids)] * 2, "one number"),
])
def test_prefix_matching_names_each_mistake(func, phrase):
    wrong("ex-prefix-matching", func, phrase)


@pytest.mark.parametrize("junk", [None, ..., "prefix", 3, [1, 2], lambda A, i: 1 / 0, lambda A, i: "x",
                                  lambda A, i: np.nan, lambda A, i: None, lambda A: 0.5,
                                  lambda A, i: A.__setitem__((0, 0), 5) or 0.5,
                                  lambda A, i: i.__setitem__(0, 99) or 0.5])
def test_prefix_matching_survives_junk(junk):
    assert status_of("ex-prefix-matching", junk).status in ("wrong", "not done")


def test_prefix_matching_stub_is_not_done():
    def stub(A, ids):
        raise NotImplementedError

    assert status_of("ex-prefix-matching", stub).status == "not done"


def test_prefix_matching_never_shows_the_expected_values():
    v = mha.checks.check("ex-prefix-matching", lambda A, i: prefix_matching_reference(A, i) + 0.5)
    for A, ids, _ in _cases():
        assert f"{prefix_matching_reference(A, ids):.3f}" not in v.message


@pytest.mark.parametrize("label", ["ex-break-toy", "ex-wrong-copy"])
@pytest.mark.parametrize("junk", [None, ..., "2", {"without_layer_1": "x", "two_back": 2}, np.nan, [[1], [2, 3]],
                                  {"without_layer_1": [0, 1], "two_back": 2}, object()])
def test_numeric_checkers_survive_junk(label, junk):
    assert status_of(label, junk).status in ("wrong", "not done")
