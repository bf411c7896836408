"""mha.heads.induction_scores: against a plain loop, on maps built by hand, and on bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha
from mha import heads


def _loop_scores(A, period):
    """The definition, one query at a time: the weight on the token after the earlier copy."""
    A = np.asarray(A, dtype=float)
    lead = A.shape[:-4]
    L, h, T, _ = A.shape[-4:]
    flat = A.reshape(-1, L, h, T, T)
    out = np.zeros((L, h))
    for b in range(flat.shape[0]):
        for layer in range(L):
            for head in range(h):
                weights = [flat[b, layer, head, t, t - period + 1] for t in range(period, T)]
                out[layer, head] += sum(weights) / len(weights)
    return out / max(1, int(np.prod(lead)))


def _causal_uniform(T):
    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]


@given(seed=st.integers(0, 2**32 - 1), lead=st.sampled_from([(), (1,), (3,), (2, 2)]),
       L=st.integers(1, 3), h=st.integers(1, 3), T=st.integers(2, 9), data=st.data())
def test_matches_a_plain_loop(seed, lead, L, h, T, data):
    period = data.draw(st.integers(1, T - 1))
    rng = np.random.default_rng(seed)
    A = mha.softmax(rng.normal(size=(*lead, L, h, T, T)) * 3, axis=-1)
    got = heads.induction_scores(A, period)
    assert got.shape == (L, h)
    np.testing.assert_allclose(got, _loop_scores(A, period), rtol=1e-12, atol=1e-15)


def test_a_perfect_induction_head_scores_one_and_other_heads_zero():
    n = 4
    T = 2 * n
    induction = np.zeros((T, T))
    induction[np.arange(T), 0] = 1.0  # the first copy has no earlier copy: rest on the first token
    t = np.arange(n, T)
    induction[t] = 0.0
    induction[t, t - n + 1] = 1.0  # the repeat looks at the token after its earlier copy
    previous = np.eye(T, k=-1)
    previous[0, 0] = 1.0
    same_token = np.zeros((T, T))  # looks at the earlier copy itself, not the token after it
    same_token[np.arange(T), np.arange(T)] = 1.0
    same_token[t] = 0.0
    same_token[t, t - n] = 1.0
    A = np.stack([induction, previous, same_token])[None]  # (L=1, h=3, T, T)
    np.testing.assert_allclose(heads.induction_scores(A, n), [[1.0, 0.0, 0.0]])


def test_a_batch_is_averaged():
    T, n = 6, 3
    a = _causal_uniform(T)[None, None]
    b = np.zeros((1, 1, T, T))
    b[..., :, 0] = 1.0
    t = np.arange(n, T)
    b[0, 0, t, 0] = 0.0
    b[0, 0, t, t - n + 1] = 1.0
    both = np.stack([a, b])  # (B=2, L=1, h=1, T, T)
    expected = (heads.induction_scores(a, n) + heads.induction_scores(b, n)) / 2
    np.testing.assert_allclose(heads.induction_scores(both, n), expected)
    np.testing.assert_allclose(heads.induction_scores(b, n), [[1.0]])


def test_an_even_causal_head_scores_the_chance_level():
    T, n = 100, 50
    score = heads.induction_scores(_causal_uniform(T)[None, None], n)
    chance = np.mean(1 / (np.arange(n, T) + 1))
    np.testing.assert_allclose(score, [[chance]])
    assert 0.013 < chance < 0.015  # the "chance about 0.014" of 50 tokens repeated twice


def test_numpy_integers_are_periods_too():
    A = _causal_uniform(6)[None, None]
    np.testing.assert_allclose(heads.induction_scores(A, np.int64(3)), heads.induction_scores(A, 3))


def test_float32_in_gives_finite_scores():
    A = mha.softmax(np.random.default_rng(0).normal(size=(2, 2, 5, 5)), axis=-1).astype(np.float32)
    out = heads.induction_scores(A, 2)
    assert out.shape == (2, 2) and np.isfinite(out).all()


@pytest.mark.parametrize("A, period, error, message", [
    (np.full((4, 4), 0.25), 2, ValueError, "at least 4 axes"),
    (np.full((1, 1, 3, 4), 0.25), 2, ValueError, "self-attention"),
    (np.full((1, 1, 4, 4), 0.25), 0, ValueError, "positive integer"),
    (np.full((1, 1, 4, 4), 0.25), 4, ValueError, "from 1 to T - 1 = 3"),
    (np.full((1, 1, 4, 4), 0.25), 2.0, TypeError, "period"),
    (np.full((1, 1, 4, 4), 0.25), True, TypeError, "period"),
    (np.full((1, 1, 4, 4), 0.3), 2, ValueError, "sum to 1"),
    (np.full((1, 1, 4, 4), np.nan), 2, ValueError, "A"),
    (np.zeros((0, 1, 4, 4)) + 0.25, 2, ValueError, "empty"),
    (np.full((1, 1, 1, 1), 1.0), 1, ValueError, "from 1 to T - 1"),
    ("abc", 1, (TypeError, ValueError), "A"),
])
def test_bad_input_is_refused_clearly(A, period, error, message):
    with pytest.raises(error, match=message):
        heads.induction_scores(A, period)
