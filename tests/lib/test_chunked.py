"""mha.attention_chunked: the same result as the plain attention, without the T x S matrix."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha.chunked import CausalTiles, _online_attention, attention_chunked, causal_tiles
from mha.timing import peak_bytes


def qkv(lead, T, S, d_k, d_v, seed, scale=1.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (scale * rng.normal(size=(*lead, T, d_k)).astype(dtype),
            scale * rng.normal(size=(*lead, S, d_k)).astype(dtype),
            rng.normal(size=(*lead, S, d_v)).astype(dtype))


sizes = st.tuples(st.lists(st.integers(1, 3), max_size=2), st.integers(1, 20), st.integers(1, 20),
                  st.integers(1, 6), st.integers(1, 6), st.integers(1, 25), st.integers(0, 2**16))


def test_lazy_top_level_name():
    assert mha.attention_chunked is attention_chunked


@settings(max_examples=60, deadline=None)
@given(sizes, st.sampled_from([0.1, 1.0, 10.0]))
def test_equals_plain_attention(size, scale):
    lead, T, S, d_k, d_v, block, seed = size
    Q, K, V = qkv(lead, T, S, d_k, d_v, seed, scale)
    plain, _ = mha.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(attention_chunked(Q, K, V, block=block), plain, rtol=0, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(sizes)
def test_causal_equals_plain_with_causal_mask(size):
    lead, T, _, d_k, d_v, block, seed = size
    Q, K, V = qkv(lead, T, T, d_k, d_v, seed)
    plain, _ = mha.scaled_dot_product_attention(Q, K, V, mask=mha.causal_mask(T))
    np.testing.assert_allclose(attention_chunked(Q, K, V, block=block, causal=True), plain,
                               rtol=0, atol=1e-12)


def test_first_query_under_causal_mask_copies_the_first_value():
    Q, K, V = qkv((), 7, 7, 3, 2, seed=1)
    out = attention_chunked(Q, K, V, block=3, causal=True)
    np.testing.assert_array_equal(out[0], V[0])


def test_large_scores_do_not_overflow():
    # scores around 1e5: a naive exp would overflow to inf and give NaN
    Q, K, V = qkv((2,), 9, 13, 4, 3, seed=2, scale=300.0)
    out = attention_chunked(Q, K, V, block=4)
    plain, _ = mha.scaled_dot_product_attention(Q, K, V)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out, plain, rtol=0, atol=1e-12)


def test_leading_axes_broadcast_like_the_core():
    rng = np.random.default_rng(3)
    Q = rng.normal(size=(2, 3, 5, 4))
    K = rng.normal(size=(3, 6, 4))
    V = rng.normal(size=(1, 6, 2))
    plain, _ = mha.scaled_dot_product_attention(Q, K, V)
    out = attention_chunked(Q, K, V, block=4)
    assert out.shape == plain.shape == (2, 3, 5, 2)
    np.testing.assert_allclose(out, plain, rtol=0, atol=1e-12)


def test_float32_stays_float32():
    Q, K, V = qkv((2,), 8, 8, 4, 4, seed=4, dtype=np.float32)
    out = attention_chunked(Q, K, V, block=3, causal=True)
    assert out.dtype == np.float32
    plain, _ = mha.scaled_dot_product_attention(Q, K, V, mask=mha.causal_mask(8))
    np.testing.assert_allclose(out, plain, rtol=1e-5, atol=1e-6)


def test_integers_are_read_as_float64():
    out = attention_chunked([[1, 0]], [[1, 0], [0, 1]], [[1, 2], [3, 4]])
    assert out.dtype == np.float64


def test_never_holds_the_full_score_matrix():
    T, d_k, block = 2048, 16, 64
    Q, K, V = qkv((), T, T, d_k, d_k, seed=5)
    _, lean = peak_bytes(attention_chunked, Q, K, V, block=block)
    _, plain = peak_bytes(mha.scaled_dot_product_attention, Q, K, V)
    one_matrix = T * T * 8
    assert plain >= one_matrix  # the plain version holds at least one T x T matrix
    assert lean < one_matrix / 4  # the chunked one holds T x block pieces and T x d_v rows


@settings(max_examples=30, deadline=None)
@given(sizes)
def test_skipping_masked_blocks_changes_nothing(size):
    lead, T, _, d_k, d_v, block, seed = size
    Q, K, V = qkv(lead, T, T, d_k, d_v, seed)
    skip = attention_chunked(Q, K, V, block=block, causal=True)
    full = attention_chunked(Q, K, V, block=block, causal=True, skip_masked=False)
    np.testing.assert_allclose(skip, full, rtol=0, atol=1e-12)


class CountingArray(np.ndarray):
    """An array that records the row counts of the products it takes part in, as the left factor."""

    rows = []

    def __matmul__(self, other):
        CountingArray.rows.append(self.shape[-2])
        return np.asarray(self) @ np.asarray(other)


@pytest.mark.parametrize("T, block", [(256, 64), (100, 64), (7, 3), (5, 8)])
def test_the_loop_skips_the_tiles_above_the_diagonal(T, block):
    Q, K, V = qkv((), T, T, 2, 2, seed=6)
    CountingArray.rows = []
    _online_attention(Q.view(CountingArray), K, V, block, causal=True)
    n = -(-T // block)
    # one score product per key block; its rows are the queries from the block's first key on
    assert CountingArray.rows == [T - j * block for j in range(n)]
    tiles = causal_tiles(T, block)
    assert tiles.total == n * n and tiles.skipped == n * (n - 1) // 2
    rows_in_tiles = sum(-(-r // block) for r in CountingArray.rows)  # query tiles each product covers
    assert rows_in_tiles == tiles.computed
    CountingArray.rows = []
    _online_attention(Q.view(CountingArray), K, V, block, causal=True, skip_masked=False)
    assert CountingArray.rows == [T] * n


def test_causal_tiles_checks_its_input():
    assert causal_tiles(1, 1) == CausalTiles(1, 0)
    with pytest.raises(ValueError, match="block"):
        causal_tiles(4, 0)
    with pytest.raises(TypeError, match="T"):
        causal_tiles(4.0, 2)


@pytest.mark.parametrize("args, kwargs, error, words", [
    ((None, np.ones((2, 2)), np.ones((2, 2))), {}, TypeError, "Q"),
    ((np.ones((2, 2)), "abc", np.ones((2, 2))), {}, TypeError, "K"),
    ((np.ones((2, 2)), np.ones((2, 2)), np.array([[1.0, np.nan], [0, 0]])), {}, ValueError, "V"),
    ((np.ones(2), np.ones((2, 2)), np.ones((2, 2))), {}, ValueError, "Q"),
    ((np.ones((2, 3)), np.ones((2, 2)), np.ones((2, 2))), {}, ValueError, "d_k"),
    ((np.ones((2, 2)), np.ones((3, 2)), np.ones((2, 2))), {}, ValueError, "length S"),
    ((np.ones((2, 2, 2)), np.ones((3, 2, 2)), np.ones((2, 2))), {}, ValueError, "broadcast"),
    ((np.ones((2, 2)), np.ones((0, 2)), np.ones((0, 2))), {}, ValueError, "no positions"),
    ((np.ones((2, 2)), np.ones((3, 2)), np.ones((3, 2))), {"causal": True}, ValueError, "causal"),
    ((np.ones((2, 2)),) * 3, {"causal": "yes"}, TypeError, "causal"),
    ((np.ones((2, 2)),) * 3, {"block": 0}, ValueError, "block"),
    ((np.ones((2, 2)),) * 3, {"block": 2.5}, TypeError, "block"),
    ((np.ones((2, 2)),) * 3, {"causal": True, "skip_masked": 1}, TypeError, "skip_masked"),
])
def test_bad_input_is_named(args, kwargs, error, words):
    with pytest.raises(error, match=words):
        attention_chunked(*args, **kwargs)
