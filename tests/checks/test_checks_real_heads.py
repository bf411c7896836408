"""Checkers of book/09_real_heads.md: accept the reference, name each classic mistake, survive junk."""

import numpy as np
import pytest

import mha
from mha.heads import previous_token_mass


def _verdict(label, answer):
    v = mha.checks.check(label, answer)
    assert isinstance(v, mha.checks.Verdict)
    return v


def test_previous_token_mass_accepts_the_library_and_a_loop():
    assert _verdict("ex-previous-token-mass", previous_token_mass).ok

    def loop(A):
        return sum(A[t, t - 1] for t in range(1, len(A))) / (len(A) - 1)

    assert _verdict("ex-previous-token-mass", loop).ok


@pytest.mark.parametrize("wrong_func, message", [
    (lambda A: np.diagonal(A, -1).sum() / len(A), "divided by T"),
    (lambda A: np.diagonal(A, 1).mean(), "weight on the next token"),
    (lambda A: np.diagonal(A).mean(), "puts on itself"),
    (lambda A: np.diagonal(A, -1).sum(), "did not average"),
    (lambda A: np.diagonal(A, -1), "should be one number"),
])
def test_previous_token_mass_names_each_mistake(wrong_func, message):
    v = _verdict("ex-previous-token-mass", wrong_func)
    assert v.status == "wrong" and message in v.message


@pytest.mark.parametrize("junk", [None, ..., "previous", 3, [1, 2], lambda A: 1 / 0, lambda A: "x",
                                  lambda A: np.nan, lambda A: None])
def test_previous_token_mass_survives_junk(junk):
    v = _verdict("ex-previous-token-mass", junk)
    assert v.status in ("wrong", "not done")
    assert str(previous_token_mass(np.eye(5, k=-1) + np.eye(5)[[0]] * [[1], [0], [0], [0], [0]])) not in v.message


def test_previous_token_mass_stub_is_not_done():
    def stub(A):
        raise NotImplementedError

    assert _verdict("ex-previous-token-mass", stub).status == "not done"


def test_kv_head_accepts_the_answer_in_any_sequence_type():
    from mha.checks.real_heads import KV_EXERCISE

    assert KV_EXERCISE == (24, 32, 8, 64, 1000, 13)
    for answer in ([3, 24_576_000], (3, 24_576_000), np.array([3.0, 24_576_000.0])):
        assert _verdict("ex-kv-head", answer).ok


@pytest.mark.parametrize("answer, message", [
    ([5, 24_576_000], "not i % g"),
    ([1, 24_576_000], "not by g"),
    ([3, 12_288_000], "count both"),
    ([3, 98_304_000], "not the h query heads"),
    ([3, 1_024_000], "multiply by the L layers"),
    ([3, 24_576], "cache for one token"),
    ([2, 24_576_000], "too small"),
])
def test_kv_head_names_each_mistake(answer, message):
    v = _verdict("ex-kv-head", answer)
    assert v.status == "wrong" and message in v.message, v.message


@pytest.mark.parametrize("junk", [None, ..., "3, 4", [3], [3, 4, 5], [np.nan, 4], {"a": 1}, [[3, 4]]])
def test_kv_head_survives_junk_without_leaking(junk):
    v = _verdict("ex-kv-head", junk)
    assert v.status in ("wrong", "not done")
    assert "24576000" not in v.message and "24,576,000" not in v.message and "24_576_000" not in v.message
