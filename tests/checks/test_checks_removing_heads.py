"""Checkers of book/10_removing_heads.md: accept the reference, name each classic mistake, survive junk."""

import numpy as np
import pytest

import mha
from mha.checks.removing_heads import SURVIVAL_HEADS, ZERO_MEAN_CONCAT, ZERO_MEAN_W_O, zero_and_mean


def _verdict(label, answer):
    v = mha.checks.check(label, answer)
    assert isinstance(v, mha.checks.Verdict)
    return v


def _reference():
    concat, W_O = ZERO_MEAN_CONCAT, ZERO_MEAN_W_O
    zeroed = mha.heads.ablate_heads(concat, [1], 2, "zero") @ W_O
    by_mean = mha.heads.ablate_heads(concat, [1], 2, "mean") @ W_O
    return zeroed, by_mean


def test_zero_vs_mean_accepts_the_library_in_any_container():
    zeroed, by_mean = _reference()
    for answer in ([zeroed, by_mean], (zeroed, by_mean), np.stack([zeroed, by_mean]),
                   [zeroed.tolist(), by_mean.tolist()]):
        assert _verdict("ex-zero-vs-mean", answer).ok
    np.testing.assert_array_equal(zero_and_mean(), np.stack([zeroed, by_mean]))


def test_zero_vs_mean_offset_is_the_same_in_every_row():
    zeroed, by_mean = _reference()
    gap = by_mean - zeroed
    np.testing.assert_allclose(gap, np.tile(ZERO_MEAN_CONCAT[:, 1].mean() * ZERO_MEAN_W_O[1], (3, 1)))


@pytest.mark.parametrize("make, message", [
    (lambda z, m: [m, z], "swapped"),
    (lambda z, m: [ZERO_MEAN_CONCAT * [1, 0], np.column_stack([ZERO_MEAN_CONCAT[:, 0], np.full(3, 2.0)])],
     "before W^O"),
    (lambda z, m: list(zero_and_mean(head=0)), "removed head 1"),
    (lambda z, m: list(zero_and_mean(column_mean=ZERO_MEAN_CONCAT.mean(axis=1))), "mean of that row"),
    (lambda z, m: list(zero_and_mean(column_mean=ZERO_MEAN_CONCAT.mean())), "whole table"),
    (lambda z, m: [z, ZERO_MEAN_CONCAT @ ZERO_MEAN_W_O], "nothing removed"),
    (lambda z, m: [z, z], "equals zeroed"),
    (lambda z, m: [z, m + 1], "too large"),
    (lambda z, m: [z], "shape"),
])
def test_zero_vs_mean_names_each_mistake(make, message):
    v = _verdict("ex-zero-vs-mean", make(*_reference()))
    assert v.status == "wrong" and message in v.message, v.message


def test_zero_vs_mean_recognises_rounding_before_a_mistake():
    zeroed, by_mean = _reference()
    assert _verdict("ex-zero-vs-mean", [zeroed + 1e-12, by_mean]).ok


@pytest.mark.parametrize("junk", [None, ..., [..., ...], "zero", 3, [[1, 2]], {"zeroed": 1}, [np.nan] * 12,
                                  [[["a"]]], object()])
def test_zero_vs_mean_survives_junk_without_leaking(junk):
    v = _verdict("ex-zero-vs-mean", junk)
    assert v.status in ("wrong", "not done")
    assert "[ 4. -2.]" not in v.message and "9, 3" not in v.message


def test_mean_survives_accepts_the_benchmark_answer():
    assert len(SURVIVAL_HEADS) == 4
    for answer in ([False, True, True, False], (0, 1, 1, 0), np.array([False, True, True, False])):
        assert _verdict("ex-mean-survives", answer).ok


@pytest.mark.parametrize("answer, message", [
    ([True] * 4, "every head stays harmful"),
    ([False] * 4, "no head stays harmful"),
    ([True, False, False, True], "wrong way round"),
    ([False, True, False, False], "at least one prediction"),
    ([True, False], "give 4 values"),
    ([False, False, "yes", False], "prediction 3"),
    ([False, False, 0.5, False], "prediction 3"),
    (True, "not a single value"),
])
def test_mean_survives_names_each_mistake(answer, message):
    v = _verdict("ex-mean-survives", answer)
    assert v.status == "wrong" and message in v.message, v.message


@pytest.mark.parametrize("junk", [None, ..., [..., ..., ..., ...], "TFFT", 3, {"a": 1}, np.zeros((2, 2)), object()])
def test_mean_survives_survives_junk_without_leaking(junk):
    v = _verdict("ex-mean-survives", junk)
    assert v.status in ("wrong", "not done")
    assert "False, True, True, False" not in v.message
