"""Tests of mha.split_trace: where each entry goes when the width is split into heads."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import split_trace

SETTINGS = settings(max_examples=40, deadline=None)


@st.composite
def split_sizes(draw):
    T = draw(st.integers(1, 5))
    h = draw(st.integers(1, 6))
    d_k = draw(st.integers(1, 4))
    return T, h * d_k, h


@SETTINGS
@given(split_sizes())
def test_right_split_traces_split_heads(sizes):
    T, d, h = sizes
    X = np.random.default_rng(d * 7 + T).normal(size=(T, d))
    split = split_trace.head_split(T, d, h)
    np.testing.assert_array_equal(X[split.token, split.column], mha.split_heads(X, h))
    d_k = d // h
    for i in range(h):  # head i: columns i*d_k .. (i+1)*d_k - 1 of every token, tokens in order
        np.testing.assert_array_equal(split.column[i], np.tile(np.arange(i * d_k, (i + 1) * d_k), (T, 1)))
        np.testing.assert_array_equal(split.token[i], np.repeat(np.arange(T)[:, None], d_k, axis=1))
    assert not split.mixes_tokens


@SETTINGS
@given(split_sizes())
def test_wrong_split_traces_the_direct_reshape_and_mixes_tokens(sizes):
    T, d, h = sizes
    X = np.random.default_rng(d * 7 + T).normal(size=(T, d))
    wrong = split_trace.head_split(T, d, h, wrong=True)
    np.testing.assert_array_equal(X[wrong.token, wrong.column], X.reshape(h, T, d // h))
    assert wrong.mixes_tokens == (h > 1 and T > 1)


@SETTINGS
@given(split_sizes(), st.booleans())
def test_owner_is_the_inverse_of_the_split(sizes, wrong):
    T, d, h = sizes
    split = split_trace.head_split(T, d, h, wrong=wrong)
    heads = np.broadcast_to(np.arange(h)[:, None, None], split.token.shape)
    np.testing.assert_array_equal(split.owner[split.token, split.column], heads)
    assert np.bincount(split.owner.ravel(), minlength=h).tolist() == [T * d // h] * h


def test_divisors_and_split_errors():
    assert split_trace.divisors(12) == (1, 2, 3, 4, 6, 12) and split_trace.divisors(7) == (1, 7)
    with pytest.raises(ValueError, match="h=5 does not divide"):
        split_trace.head_split(3, 12, 5)
    with pytest.raises(TypeError, match="T"):
        split_trace.head_split(2.0, 4, 2)


def test_h_sweep_frames_of_the_worked_example():
    ex = mha.examples.i_love_llms()
    frames = split_trace.h_sweep_frames(ex)
    assert [f.h for f in frames] == [1, 2, 4] and [f.d_k for f in frames] == [4, 2, 1]
    _, A = mha.multi_head_attention(ex.X, *ex.weights, h=2)
    np.testing.assert_array_equal(frames[1].weights, A)
    for f in frames:
        np.testing.assert_allclose(f.weights.sum(axis=-1), 1)
        assert not f.right.mixes_tokens and f.wrong.mixes_tokens == (f.h > 1)


@pytest.mark.parametrize("call, error, words", [
    (lambda: split_trace.head_split(2, 4, 2, wrong="yes"), TypeError, "wrong"),
    (lambda: split_trace.head_split(2, 4, 0), ValueError, "h must be"),
    (lambda: split_trace.divisors(0), ValueError, "d must be"),
    (lambda: split_trace.h_sweep_frames("layer"), TypeError, "WorkedExample"),
])
def test_split_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
