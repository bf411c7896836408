"""Property tests of the core attention functions against plain loop references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha

SETTINGS = settings(max_examples=60, deadline=None)


# ---------------------------------------------------------------- references: loops, no tricks
def loop_softmax(row):
    m = max(row)
    e = [np.exp(x - m) for x in row]
    s = sum(e)
    return [x / s for x in e]


def loop_attention(Q, K, V, allowed):
    """One head, one sequence, written with Python loops."""
    T, d_k = Q.shape
    S = K.shape[0]
    weights = np.zeros((T, S))
    for t in range(T):
        row = []
        for s in range(S):
            score = sum(Q[t, j] * K[s, j] for j in range(d_k)) / np.sqrt(d_k)
            row.append(score if allowed[t, s] else -np.inf)
        weights[t] = loop_softmax(row)
    out = np.zeros((T, V.shape[1]))
    for t in range(T):
        for s in range(S):
            out[t] += weights[t, s] * V[s]
    return out, weights


def loop_mha(X, W_Q, W_K, W_V, W_O, h, g, allowed):
    """Multi-head attention for one sequence: slice each head's columns, loop over heads."""
    d_k = W_Q.shape[1] // h
    d_v = W_V.shape[1] // g
    outs, maps = [], []
    for i in range(h):
        j = i // (h // g)  # the key/value head that query head i reads
        Q_i = X @ W_Q[:, i * d_k:(i + 1) * d_k]
        K_j = X @ W_K[:, j * d_k:(j + 1) * d_k]
        V_j = X @ W_V[:, j * d_v:(j + 1) * d_v]
        o, w = loop_attention(Q_i, K_j, V_j, allowed)
        outs.append(o)
        maps.append(w)
    return np.concatenate(outs, axis=1) @ W_O, np.stack(maps)


# ---------------------------------------------------------------- strategies
@st.composite
def layers(draw):
    """Random batch, length, heads, KV grouping, widths, weights and mask."""
    batch = draw(st.sampled_from([(), (2,), (2, 1)]))
    T = draw(st.integers(1, 5))
    g = draw(st.integers(1, 3))
    h = g * draw(st.integers(1, 3))
    d_k = draw(st.integers(1, 3))
    d_v = draw(st.integers(1, 3))
    d = draw(st.integers(1, 6))
    d_out = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    causal = draw(st.booleans())
    use_mask = draw(st.booleans())
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(*batch, T, d))
    W = [rng.normal(size=s) for s in ((d, h * d_k), (d, g * d_k), (d, g * d_v), (h * d_v, d_out))]
    mask = None
    if use_mask:
        mask = rng.random((T, T)) < 0.6
        mask[np.arange(T), np.arange(T)] = True  # every row keeps something to attend to
    return X, W, h, g, mask, causal


def allowed_of(T, mask, causal):
    allowed = np.ones((T, T), dtype=bool) if mask is None else mask.copy()
    if causal:
        allowed &= np.tril(np.ones((T, T), dtype=bool))
    return allowed


# ---------------------------------------------------------------- properties
@SETTINGS
@given(layers())
def test_matches_loop_reference(layer):
    X, W, h, g, mask, causal = layer
    Y, A = mha.multi_head_attention(X, *W, h, mask=mask, causal=causal, n_kv_heads=g)
    allowed = allowed_of(X.shape[-2], mask, causal)
    for idx in np.ndindex(*X.shape[:-2]):
        Y_ref, A_ref = loop_mha(X[idx], *W, h, g, allowed)
        np.testing.assert_allclose(Y[idx], Y_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(A[idx], A_ref, rtol=0, atol=1e-12)


@SETTINGS
@given(layers())
def test_block_identity(layer):
    """Concatenate then project equals the sum over heads of head_i times its block of W_O."""
    X, W, h, g, mask, causal = layer
    s = mha.attention_steps(X, *W, h, mask=mask, causal=causal, n_kv_heads=g)
    W_O = W[3]
    total = sum(s.head_outputs[..., i, :, :] @ W_O[i * s.d_v:(i + 1) * s.d_v] for i in range(h))
    np.testing.assert_allclose(s.output, total, rtol=0, atol=1e-12)


@SETTINGS
@given(layers())
def test_weight_rows_sum_to_one_and_respect_mask(layer):
    X, W, h, g, mask, causal = layer
    _, A = mha.multi_head_attention(X, *W, h, mask=mask, causal=causal, n_kv_heads=g)
    np.testing.assert_allclose(A.sum(axis=-1), 1.0, atol=1e-12)
    assert np.all(A[..., ~allowed_of(X.shape[-2], mask, causal)] == 0.0)


@SETTINGS
@given(layers(), st.randoms(use_true_random=False))
def test_permutation_equivariance(layer, rnd):
    """Without a mask, permuting the tokens permutes the output rows and the attention maps."""
    X, W, h, g, _, _ = layer
    T = X.shape[-2]
    perm = list(range(T))
    rnd.shuffle(perm)
    Y, A = mha.multi_head_attention(X, *W, h, n_kv_heads=g)
    Yp, Ap = mha.multi_head_attention(X[..., perm, :], *W, h, n_kv_heads=g)
    np.testing.assert_allclose(Yp, Y[..., perm, :], atol=1e-12)
    np.testing.assert_allclose(Ap, A[..., perm, :][..., perm], atol=1e-12)


@SETTINGS
@given(layers())
def test_score_rank_at_most_d_k(layer):
    X, W, h, g, _, _ = layer
    s = mha.attention_steps(X, *W, h, n_kv_heads=g)
    for idx in np.ndindex(*s.scores.shape[:-2]):
        *batch, i = idx
        Q_i, K_j = s.Q_heads[(*batch, i)], s.K_heads[(*batch, i // (h // g))]
        # Rounding in q.k is at most a few ulps of |q||k|: the rank's tolerance follows the inputs' size,
        # not the size of the scores (which cancellation can make tiny).
        tol = 1e-12 * max(np.linalg.norm(Q_i) * np.linalg.norm(K_j), 1e-300)
        assert np.linalg.matrix_rank(s.scores[idx], tol=tol) <= s.d_k


@SETTINGS
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 4), st.sampled_from([(), (3,), (2, 2)]),
       st.integers(0, 2**32 - 1))
def test_split_merge_round_trip(h, T, d_k, batch, seed):
    X = np.random.default_rng(seed).normal(size=(*batch, T, h * d_k))
    Z = mha.split_heads(X, h)
    assert Z.shape == (*batch, h, T, d_k)
    for i in range(h):  # head i holds columns i*d_k ... (i+1)*d_k of every token
        np.testing.assert_array_equal(Z[..., i, :, :], X[..., :, i * d_k:(i + 1) * d_k])
    np.testing.assert_array_equal(mha.merge_heads(Z), X)


@SETTINGS
@given(st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_sdpa_matches_loop(T, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = rng.normal(size=(T, 3)), rng.normal(size=(T + 1, 3)), rng.normal(size=(T + 1, 2))
    out, w = mha.scaled_dot_product_attention(Q, K, V)
    out_ref, w_ref = loop_attention(Q, K, V, np.ones((T, T + 1), dtype=bool))
    np.testing.assert_allclose(out, out_ref, atol=1e-12)
    np.testing.assert_allclose(w, w_ref, atol=1e-12)


# ---------------------------------------------------------------- fixed facts
def test_softmax_is_stable_for_huge_inputs():
    w = mha.softmax(np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4]]))
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w.sum(axis=-1), 1.0)
    np.testing.assert_allclose(w[1], 1 / 3)


def test_softmax_gives_neg_inf_zero_weight():
    w = mha.softmax(np.array([0.0, -np.inf, 0.0]))
    np.testing.assert_array_equal(w, [0.5, 0.0, 0.5])


def test_softmax_axis():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(mha.softmax(x, axis=0).sum(axis=0), 1.0)


def test_causal_mask():
    m = mha.causal_mask(4)
    assert m.dtype == bool and m.shape == (4, 4)
    assert m[2, 1] and m[2, 2] and not m[1, 2]


def test_causal_and_mask_combine():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4, 4))
    W = [rng.normal(size=(4, 4)) for _ in range(4)]
    mask = np.ones((4, 4), dtype=bool)
    mask[3, 0] = False
    _, A = mha.multi_head_attention(X, *W, 2, mask=mask, causal=True)
    assert np.all(A[:, 0, 1:] == 0)  # causal
    assert np.all(A[:, 3, 0] == 0)  # mask


def test_worked_example_numbers():
    ex = mha.examples.i_love_llms()
    s = mha.attention_steps(ex.X, *ex.weights, ex.h)
    np.testing.assert_array_equal(s.Q, [[2, 1, 0, 0], [1, 2, 0, 1], [1, 0, 1, 2]])
    np.testing.assert_array_equal(s.K, [[2, 0, 1, 0], [0, 2, 0, 1], [1, 0, 0, 2]])
    np.testing.assert_array_equal(s.V, [[1, 1, 0, 0], [2, 0, 0, 1], [1, 0, 1, 0]])
    np.testing.assert_array_equal(s.scores[0], [[4, 2, 2], [2, 4, 1], [2, 0, 1]])
    np.testing.assert_array_equal(s.scores[1], [[0, 0, 0], [0, 1, 2], [1, 2, 4]])
    np.testing.assert_allclose(s.weights[0], [[0.67, 0.16, 0.16], [0.18, 0.73, 0.09], [0.58, 0.14, 0.28]],
                               atol=0.005)
    np.testing.assert_allclose(s.weights[1], [[0.33, 0.33, 0.33], [0.14, 0.28, 0.58], [0.09, 0.18, 0.73]],
                               atol=0.005)
    np.testing.assert_allclose(s.concat, [[1.16, 0.67, 0.33, 0.33], [1.73, 0.18, 0.58, 0.28],
                                          [1.14, 0.58, 0.73, 0.18]], atol=0.005)
    np.testing.assert_allclose(s.output, [[1.01, 1.01, 0.83, 1.50], [0.46, 0.75, 1.16, 2.31],
                                          [0.75, 1.31, 0.41, 1.87]], atol=0.005)


def test_single_head_recap_numbers():
    ex = mha.examples.i_love_llms()
    Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V
    out, w = mha.scaled_dot_product_attention(Q, K, V)
    np.testing.assert_array_equal(Q @ K.T, [[4, 2, 2], [2, 5, 3], [3, 2, 5]])
    np.testing.assert_allclose(w, [[0.58, 0.21, 0.21], [0.14, 0.63, 0.23], [0.23, 0.14, 0.63]], atol=0.005)
    np.testing.assert_allclose(out[1], [1.63, 0.14, 0.23, 0.63], atol=0.005)


def test_split_heads_is_not_a_direct_reshape():
    X = np.arange(12.0).reshape(3, 4)
    wrong = X.reshape(2, 3, 2)
    assert not np.array_equal(mha.split_heads(X, 2), wrong)


def test_float32_is_kept():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3, 4)).astype(np.float32)
    W = [rng.normal(size=(4, 4)).astype(np.float32) for _ in range(4)]
    Y, A = mha.multi_head_attention(X, *W, 2)
    assert Y.dtype == np.float32 and A.dtype == np.float32


def test_biases_are_added():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3, 4))
    W = [rng.normal(size=(4, 4)) for _ in range(4)]
    b = [rng.normal(size=4) for _ in range(4)]
    s = mha.attention_steps(X, *W, 2, b_Q=b[0], b_K=b[1], b_V=b[2], b_O=b[3])
    np.testing.assert_allclose(s.Q, X @ W[0] + b[0])
    np.testing.assert_allclose(s.output, s.concat @ W[3] + b[3])


def test_gqa_head_grouping():
    """Query heads 0,1 read KV head 0; heads 2,3 read KV head 1 (PyTorch's enable_gqa grouping)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 6))
    W_Q, W_K, W_V = rng.normal(size=(6, 8)), rng.normal(size=(6, 4)), rng.normal(size=(6, 4))
    W_O = rng.normal(size=(8, 6))
    s = mha.attention_steps(X, W_Q, W_K, W_V, W_O, 4, n_kv_heads=2)
    assert s.K_heads.shape == (2, 5, 2)
    for i in range(4):
        np.testing.assert_allclose(s.scores[i], s.Q_heads[i] @ s.K_heads[i // 2].T)


@pytest.mark.parametrize("g", [1, 2, 4])
def test_mqa_gqa_mha_shapes(g):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(2, 5, 8))
    W = (rng.normal(size=(8, 8)), rng.normal(size=(8, 2 * g)), rng.normal(size=(8, 2 * g)),
         rng.normal(size=(8, 8)))
    Y, A = mha.multi_head_attention(X, *W, 4, n_kv_heads=g)
    assert Y.shape == (2, 5, 8) and A.shape == (2, 4, 5, 5)


# ---------------------------------------------------------------- causal by blocks, grouped heads
@pytest.fixture(params=[1, 2, 3, 256])
def block_rows(request):
    """Causal attention's block height: several, including blocks that do not divide T."""
    return request.param


def causal_blocks(Q, K, V, rows, mask=None, grouped=False):
    """Checked causal attention (work type, overflow check) with query blocks of ``rows`` rows."""
    return mha.attention._attention(Q, K, V, mask, True, grouped=grouped, rows=rows)


def test_the_block_height_is_a_keyword_with_the_module_default():
    import inspect

    for f in (mha.attention._attend_causal, mha.attention._grouped, mha.attention._attention):
        assert inspect.signature(f).parameters["rows"].default == mha.attention.CAUSAL_BLOCK_ROWS
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 2, 600, 4))  # T > 2 * 256: the blocked loop, at the default height
    out, A = mha.scaled_dot_product_attention(Q, K, V, causal=True)
    out_b, A_b = causal_blocks(Q, K, V, rows=mha.attention.CAUSAL_BLOCK_ROWS)
    assert np.array_equal(out, out_b) and np.array_equal(A, A_b)


@settings(max_examples=30, deadline=None)
@given(layers())
def test_causal_blocks_match_the_loop_reference(layer):
    X, W, h, g, mask, _ = layer
    s = mha.attention_steps(X, *W, h, n_kv_heads=g)  # the heads the layer attends with
    allowed = allowed_of(X.shape[-2], mask, True)
    for rows in (1, 2, 3, 256):
        Z, A = causal_blocks(s.Q_heads, s.K_heads, s.V_heads, rows, mask=mask, grouped=True)
        Y = mha.merge_heads(Z) @ W[3]  # (..., h, T, d_v) -> (..., T, h*d_v) -> (..., T, d_out)
        for idx in np.ndindex(*X.shape[:-2]):
            Y_ref, A_ref = loop_mha(X[idx], *W, h, g, allowed)
            np.testing.assert_allclose(Y[idx], Y_ref, rtol=0, atol=1e-12)
            np.testing.assert_allclose(A[idx], A_ref, rtol=0, atol=1e-12)


def test_causal_sdpa_equals_an_explicit_mask(block_rows):
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(3, 2, 7, 4))
    out, A = causal_blocks(Q, K, V, block_rows)
    out_m, A_m = mha.scaled_dot_product_attention(Q, K, V, mask=mha.causal_mask(7))
    np.testing.assert_allclose(out, out_m, atol=1e-13)
    np.testing.assert_allclose(A, A_m, atol=1e-13)
    assert np.all(np.triu(A, 1) == 0)


@pytest.mark.parametrize("scale", [1.0, 20.0])  # small scores (no shift by the row maximum) and large ones
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_causal_blocks_with_small_and_large_scores(block_rows, scale, dtype):
    """Both ways of leaving the future out of a block (after exp when every score is small, as -inf before
    when not) give the explicitly masked weights; large scores must not underflow a row to 0."""
    rng = np.random.default_rng(5)
    Q, K, V = (scale * rng.normal(size=(3, 2, 9, 4))).astype(dtype)
    Q[0] *= 0  # a head whose scores are all 0: flat rows
    out, A = causal_blocks(Q, K, V, block_rows)
    out_m, A_m = mha.scaled_dot_product_attention(Q, K, V, mask=mha.causal_mask(9))
    tol = 1e-12 if dtype == np.float64 else 2e-6
    np.testing.assert_allclose(A, A_m, rtol=0, atol=tol)
    np.testing.assert_allclose(out, out_m, rtol=tol, atol=tol * scale)
    assert np.all(np.triu(A, 1) == 0) and np.all(np.isfinite(A))
    np.testing.assert_allclose(A.sum(-1), 1, atol=10 * tol)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 6), st.integers(1, 6), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_grouped_attention_equals_copied_key_value_heads(g, r, T, d_k, causal, seed):
    """Reading a shared head through a broadcast axis equals copying it to every query head."""
    rng = np.random.default_rng(seed)
    h = g * r
    Q = rng.normal(size=(2, h, T, d_k))
    K, V = rng.normal(size=(2, g, T, d_k)), rng.normal(size=(2, g, T, 3))
    out, A = mha.grouped_attention(Q, K, V, causal=causal)
    mask = mha.causal_mask(T) if causal else None
    out_ref, A_ref = mha.scaled_dot_product_attention(Q, np.repeat(K, r, axis=1), np.repeat(V, r, axis=1),
                                                      mask=mask)
    np.testing.assert_allclose(out, out_ref, atol=1e-13)
    np.testing.assert_allclose(A, A_ref, atol=1e-13)


def test_grouped_attention_with_a_per_head_mask():
    rng = np.random.default_rng(4)
    Q, K, V = rng.normal(size=(4, 5, 2)), rng.normal(size=(2, 5, 2)), rng.normal(size=(2, 5, 2))
    mask = rng.random((4, 5, 5)) < 0.5
    mask[:, :, 0] = True
    out, A = mha.grouped_attention(Q, K, V, mask=mask)
    for i in range(4):
        o, w = mha.scaled_dot_product_attention(Q[i], K[i // 2], V[i // 2], mask=mask[i])
        np.testing.assert_allclose(out[i], o, atol=1e-13)
        np.testing.assert_allclose(A[i], w, atol=1e-13)


def test_grouped_attention_rejects_heads_that_do_not_divide():
    with pytest.raises(ValueError, match=r"g must divide.*\(3, 2, 2\).*\(2, 2, 2\)"):
        mha.grouped_attention(np.ones((3, 2, 2)), np.ones((2, 2, 2)), np.ones((2, 2, 2)))


def test_attention_steps_keeps_raw_unmasked_scores_under_causal():
    ex = mha.examples.i_love_llms()
    plain = mha.attention_steps(ex.X, *ex.weights, h=2)
    causal = mha.attention_steps(ex.X, *ex.weights, h=2, causal=True)
    np.testing.assert_array_equal(causal.scores, plain.scores)
    assert np.all(np.triu(causal.weights, 1) == 0)
