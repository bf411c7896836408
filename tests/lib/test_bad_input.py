"""The core under bad and adversarial input: every bad input gets a clear ValueError/TypeError that
names the argument and the shapes; finite in, finite out or a clear error; inputs never changed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mha


rng = np.random.default_rng(0)
X = rng.normal(size=(3, 4))
W = [rng.normal(size=(4, 4)) for _ in range(4)]


def layer(**changes):
    args = dict(X=X, W_Q=W[0], W_K=W[1], W_V=W[2], W_O=W[3], h=2)
    args.update(changes)
    return args


CASES = [
    # (what, kwargs, error type, words the message must contain)
    ("h not an integer", layer(h=2.0), TypeError, ["h", "positive integer"]),
    ("h zero", layer(h=0), ValueError, ["h", "positive integer"]),
    ("h negative", layer(h=-2), ValueError, ["h", "-2"]),
    ("h a bool", layer(h=True), TypeError, ["h"]),
    ("width not divisible by h", layer(h=3), ValueError, ["W_Q", "(4, 4)", "h=3"]),
    ("n_kv_heads not dividing h", layer(h=4, n_kv_heads=3), ValueError, ["n_kv_heads=3", "h=4"]),
    ("W_V width not divisible by n_kv_heads",
     layer(h=2, n_kv_heads=2, W_K=rng.normal(size=(4, 4)), W_V=rng.normal(size=(4, 3))),
     ValueError, ["W_V", "(4, 3)", "n_kv_heads=2"]),
    ("X with one axis", layer(X=np.ones(4)), ValueError, ["X", "(4,)", "(..., T, d_model)"]),
    ("W_Q with three axes", layer(W_Q=np.ones((1, 4, 4))), ValueError, ["W_Q", "(1, 4, 4)"]),
    ("W_Q rows vs d_model", layer(W_Q=np.ones((5, 4))), ValueError, ["W_Q", "5 rows", "d_model=4"]),
    ("W_K width vs W_Q width", layer(W_K=np.ones((4, 6))), ValueError, ["W_K", "(4, 6)", "W_Q"]),
    ("W_O rows vs h*d_v", layer(W_O=np.ones((6, 4))), ValueError, ["W_O", "(6, 4)", "h*d_v"]),
    ("mask of the wrong shape", layer(mask=np.ones((2, 2), dtype=bool)), ValueError, ["mask", "(2, 2)", "(2, 3, 3)"]),
    ("mask not boolean", layer(mask=np.ones((3, 3))), TypeError, ["mask", "bool", "float64"]),
    ("query row with nothing to attend to", layer(mask=np.array([[1, 0, 0], [0, 0, 0], [0, 0, 1]], dtype=bool)),
     ValueError, ["mask", "nothing to attend to", "query index"]),
    ("NaN in X", layer(X=np.where(np.eye(3, 4) > 0, np.nan, X)), ValueError, ["X", "nan", "(0, 0)"]),
    ("infinity in W_O", layer(W_O=np.full((4, 4), np.inf)), ValueError, ["W_O", "inf"]),
    ("-inf in W_K", layer(W_K=np.full((4, 4), -np.inf)), ValueError, ["W_K", "inf"]),
    ("text input", layer(X=[["a", "b", "c", "d"]] * 3), TypeError, ["X", "real numbers", "(3, 4)"]),
    ("None input", layer(W_V=None), TypeError, ["W_V", "None"]),
    ("ragged input", layer(X=[[1, 2, 3, 4], [1, 2]]), ValueError, ["X", "rectangular"]),
    ("complex input", layer(X=X + 1j), TypeError, ["X", "complex"]),
    ("bias of the wrong shape", layer(b_Q=np.ones(3)), ValueError, ["b_Q", "(4,)", "(3,)"]),
]


@pytest.mark.parametrize("what, kwargs, error, words", CASES, ids=[c[0] for c in CASES])
def test_multi_head_attention_rejects(what, kwargs, error, words):
    with pytest.raises(error) as info:
        mha.multi_head_attention(**kwargs)
    message = str(info.value)
    for word in words:
        assert word in message, f"{what}: {word!r} missing from {message!r}"


def test_causal_mask_rejects_bad_T():
    with pytest.raises(ValueError, match="T must be a positive integer"):
        mha.causal_mask(0)
    with pytest.raises(TypeError, match="T must be a positive integer"):
        mha.causal_mask(2.5)


def test_sdpa_rejects_mismatched_widths():
    with pytest.raises(ValueError, match=r"Q and K must have the same width d_k.*\(3, 2\).*\(3, 4\)"):
        mha.scaled_dot_product_attention(np.ones((3, 2)), np.ones((3, 4)), np.ones((3, 4)))


def test_sdpa_rejects_mismatched_lengths():
    with pytest.raises(ValueError, match=r"K and V must have the same length S.*\(3, 2\).*\(4, 2\)"):
        mha.scaled_dot_product_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((4, 2)))


def test_sdpa_rejects_bad_batch_axes():
    with pytest.raises(ValueError, match="leading"):
        mha.scaled_dot_product_attention(np.ones((2, 3, 2)), np.ones((3, 3, 2)), np.ones((3, 3, 2)))


def test_sdpa_rejects_bad_mask_shape():
    with pytest.raises(ValueError, match=r"mask has shape \(2, 3\).*\(3, 3\)"):
        mha.scaled_dot_product_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)),
                                         mask=np.ones((2, 3), dtype=bool))


def test_softmax_rejects_all_neg_inf_row():
    with pytest.raises(ValueError, match="entirely -inf"):
        mha.softmax(np.array([[0.0, 1.0], [-np.inf, -np.inf]]))


def test_softmax_rejects_nan_and_pos_inf():
    with pytest.raises(ValueError, match="nan"):
        mha.softmax([0.0, np.nan])
    with pytest.raises(ValueError, match="inf"):
        mha.softmax([0.0, np.inf])


def test_split_heads_rejects_indivisible_width():
    with pytest.raises(ValueError, match=r"width of X \(5, shape \(2, 5\)\) is not divisible by h=2"):
        mha.split_heads(np.ones((2, 5)), 2)


def test_merge_heads_rejects_too_few_axes():
    with pytest.raises(ValueError, match=r"Z must have at least 3 axes.*\(2, 4\)"):
        mha.merge_heads(np.ones((2, 4)))

# ===============================================================================================
# The core under adversarial input: finite in, finite out or a clear error; inputs never changed.
# (formerly test_core_adversarial.py)
# ===============================================================================================
def layer_of(X, d_k=2, h=2, seed=0):
    rng = np.random.default_rng(seed)
    d = X.shape[-1]
    W = [rng.normal(size=s).astype(X.dtype) for s in ((d, h * d_k), (d, h * d_k), (d, h * d_k), (h * d_k, d))]
    return W


# ---------------------------------------------------------------- finite numbers, too large for their type
@pytest.mark.parametrize("dtype, value", [(np.float16, 200.0), (np.float32, 1e20), (np.float32, 3e38)])
def test_large_scores_are_computed_in_a_wider_type(dtype, value):
    Q = np.full((3, 4), value, dtype=dtype)
    Q[1, 0] = -value  # rows differ, so the weights are not all equal
    out, A = mha.scaled_dot_product_attention(Q, Q, Q)
    assert A.dtype == dtype and out.dtype == dtype
    assert np.isfinite(A).all() and np.isfinite(out).all()
    np.testing.assert_allclose(A.astype(float).sum(axis=-1), 1.0, atol=1e-3)


def test_float16_weights_match_float64():
    rng = np.random.default_rng(0)
    Q, K, V = (rng.normal(scale=30, size=(5, 8)).astype(np.float16) for _ in range(3))
    _, A16 = mha.scaled_dot_product_attention(Q, K, V)
    _, A64 = mha.scaled_dot_product_attention(*(x.astype(np.float64) for x in (Q, K, V)))
    np.testing.assert_allclose(A16.astype(float), A64, atol=2e-3)


def test_scores_beyond_float64_give_a_clear_error():
    X = np.full((3, 4), 1e200)
    X[0, 0] = -1e200
    with pytest.raises(ValueError, match="overflowed.*scale them down"):
        mha.multi_head_attention(X, *layer_of(X), h=2)
    with pytest.raises(ValueError, match="scores.*overflowed"):
        mha.scaled_dot_product_attention(X, X, X)
    with pytest.raises(ValueError, match="scores.*overflowed"):
        mha.attention_chunked(X, X, X, block=2)


def test_float32_layer_with_large_inputs_is_finite():
    X = np.full((4, 4), 1e18, dtype=np.float32)
    X[::2] *= -1
    Y, A = mha.multi_head_attention(X, *[w * 1e-3 for w in layer_of(X)], h=2, causal=True)
    assert np.isfinite(Y).all() and np.isfinite(A).all() and A.dtype == np.float32


def test_projection_overflow_names_the_projection():
    X = np.full((2, 4), 1e300)
    W = layer_of(X)
    W[0] = W[0] * 1e300
    with pytest.raises(ValueError, match=r"Q = X @ W_Q overflowed"):
        mha.multi_head_attention(X, *W, h=2)


def test_chunked_float16_is_finite():
    Q = np.full((3, 4), 200.0, dtype=np.float16)
    Q[0] *= -1
    out = mha.attention_chunked(Q, Q, Q, block=2)
    assert out.dtype == np.float16 and np.isfinite(out).all()


# ---------------------------------------------------------------- empty axes and zero widths
@pytest.mark.parametrize("call, words", [
    (lambda: mha.softmax([]), "no entries along axis 0"),
    (lambda: mha.softmax(np.ones((2, 0))), "no entries"),
    (lambda: mha.scaled_dot_product_attention(np.ones((2, 2)), np.ones((0, 2)), np.ones((0, 2))), "S = 0"),
    (lambda: mha.scaled_dot_product_attention(np.ones((2, 0)), np.ones((2, 0)), np.ones((2, 2))), "d_k = 0"),
    (lambda: mha.multi_head_attention(np.ones((0, 4)), *layer_of(np.ones((1, 4))), h=2), "T = 0"),
    (lambda: mha.multi_head_attention(np.ones((3, 4)), np.ones((4, 0)), np.ones((4, 0)), np.ones((4, 4)),
                                      np.ones((4, 4)), h=2), "d_k >= 1"),
    (lambda: mha.attention_steps(np.ones((3, 4)), np.ones((4, 0)), np.ones((4, 0)), np.ones((4, 4)),
                                 np.ones((4, 4)), h=2), "d_k >= 1"),
    (lambda: mha.multi_head_attention(np.ones((3, 4)), np.ones((4, 4)), np.ones((4, 4)), np.ones((4, 0)),
                                      np.ones((0, 4)), h=2), "W_V"),
    (lambda: mha.attention_chunked(np.ones((2, 2)), np.ones((0, 2)), np.ones((0, 2))), "S = 0"),
])
def test_empty_sizes_get_a_clear_value_error(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_zero_queries_give_empty_results():
    out, A = mha.scaled_dot_product_attention(np.ones((0, 2)), np.ones((3, 2)), np.ones((3, 5)))
    assert out.shape == (0, 5) and A.shape == (0, 3)


# ---------------------------------------------------------------- scalar arguments
@pytest.mark.parametrize("axis, error", [(None, TypeError), (1.0, TypeError), ("0", TypeError),
                                         (True, TypeError), (2, ValueError), (-3, ValueError)])
def test_softmax_axis_is_validated(axis, error):
    with pytest.raises(error, match="axis"):
        mha.softmax(np.ones((2, 3)), axis=axis)


def test_softmax_accepts_numpy_integer_axes():
    np.testing.assert_allclose(mha.softmax(np.ones((2, 3)), axis=np.int64(0)), 0.5)


@pytest.mark.parametrize("flag", ["False", "True", 1, 0, None, np.array([True, False]), np.array(True),
                                  [True]])
@pytest.mark.parametrize("call", ["mha", "steps", "sdpa", "chunked", "grouped"])
def test_causal_takes_only_real_booleans(flag, call):
    X = np.ones((3, 4))
    funcs = {
        "mha": lambda: mha.multi_head_attention(X, *layer_of(X), h=2, causal=flag),
        "steps": lambda: mha.attention_steps(X, *layer_of(X), h=2, causal=flag),
        "sdpa": lambda: mha.scaled_dot_product_attention(X, X, X, causal=flag),
        "chunked": lambda: mha.attention_chunked(X, X, X, causal=flag),
        "grouped": lambda: mha.grouped_attention(X[None], X[None], X[None], causal=flag),
    }
    with pytest.raises(TypeError, match="causal must be True or False"):
        funcs[call]()


def test_numpy_booleans_are_real_booleans():
    X = np.ones((3, 4))
    Y, _ = mha.multi_head_attention(X, *layer_of(X), h=2, causal=np.True_)
    assert np.isfinite(Y).all()


# ---------------------------------------------------------------- masked arrays, views
def test_masked_arrays_are_refused():
    x = np.ma.masked_array([0.0, 5.0, 1.0], mask=[False, True, False])
    with pytest.raises(TypeError, match="masked array"):
        mha.softmax(x)
    with pytest.raises(TypeError, match="Q is a NumPy masked array"):
        mha.scaled_dot_product_attention(np.ma.masked_array(np.ones((2, 2))), np.ones((2, 2)), np.ones((2, 2)))
    with pytest.raises(TypeError, match="X is a NumPy masked array"):
        X = np.ma.masked_array(np.ones((3, 4)))
        mha.multi_head_attention(X, *layer_of(np.ones((3, 4))), h=2)
    with pytest.raises(TypeError, match="mask is a NumPy masked array"):
        mha.scaled_dot_product_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)),
                                         mask=np.ma.masked_array(np.ones((2, 2), bool)))


def test_split_heads_view_is_read_only_and_leaves_the_caller_alone():
    X = np.arange(12.0).reshape(3, 4)
    before = X.copy()
    heads = mha.split_heads(X, 2)
    assert np.shares_memory(heads, X)  # still a view: no copy
    with pytest.raises(ValueError, match="read-only"):
        heads[0, 0, 0] = 99.0
    np.testing.assert_array_equal(X, before)
    X[0, 0] = 5.0  # the caller may still write its own array
    assert heads[0, 0, 0] == 5.0


def test_merge_heads_view_is_read_only_when_it_shares_memory():
    Z = np.arange(6.0).reshape(1, 3, 2)  # one head: the merge is a view
    merged = mha.merge_heads(Z)
    assert np.shares_memory(merged, Z) and not merged.flags.writeable
    copy = mha.merge_heads(np.arange(12.0).reshape(2, 3, 2))
    assert copy.flags.writeable


def test_causal_and_mask_that_leave_a_row_empty():
    mask = np.ones((3, 3), dtype=bool)
    mask[1, :2] = False  # row 1 may see only key 2, which causal forbids
    with pytest.raises(ValueError, match="together with causal=True.*query index \\(1,\\)"):
        mha.scaled_dot_product_attention(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), mask=mask,
                                         causal=True)


def test_causal_needs_square_scores():
    with pytest.raises(ValueError, match="T=2 and S=3"):
        mha.scaled_dot_product_attention(np.ones((2, 2)), np.ones((3, 2)), np.ones((3, 2)), causal=True)


# ---------------------------------------------------------------- properties over the public core
CLEAR = (ValueError, TypeError)
floats = st.sampled_from([np.float16, np.float32, np.float64]).flatmap(
    lambda dt: st.tuples(st.just(dt), st.floats(-np.finfo(dt).max, np.finfo(dt).max, allow_nan=False,
                                                  allow_infinity=False, width=np.finfo(dt).bits)))


@st.composite
def qkv(draw):
    dtype = draw(st.sampled_from([np.float16, np.float32, np.float64]))
    T, S, d_k, d_v = (draw(st.integers(0, 4)) for _ in range(4))
    big = float(np.finfo(dtype).max)
    elements = st.one_of(st.floats(-3, 3, width=np.finfo(dtype).bits),
                         st.floats(-big, big, allow_nan=False, allow_infinity=False, width=np.finfo(dtype).bits))
    arr = lambda shape: draw(hnp.arrays(dtype, shape, elements=elements))
    return arr((T, d_k)), arr((S, d_k)), arr((S, d_v))


@settings(max_examples=150, deadline=None)
@given(qkv(), st.booleans())
def test_sdpa_finite_in_finite_out_or_a_clear_error(args, causal):
    copies = [a.copy() for a in args]
    try:
        out, A = mha.scaled_dot_product_attention(*args, causal=causal)
    except CLEAR:
        pass
    else:
        assert np.isfinite(out).all() and np.isfinite(A).all()
        assert out.dtype == args[0].dtype
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


@settings(max_examples=100, deadline=None)
@given(qkv(), st.integers(1, 3))
def test_chunked_finite_in_finite_out_or_a_clear_error(args, block):
    copies = [a.copy() for a in args]
    try:
        out = mha.attention_chunked(*args, block=block)
    except CLEAR:
        pass
    else:
        assert np.isfinite(out).all()
    for a, c in zip(args, copies):
        np.testing.assert_array_equal(a, c)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64]), st.integers(0, 4), st.integers(1, 2),
       st.floats(-300, 300), st.booleans(), st.integers(0, 2**32 - 1))
def test_layer_finite_in_finite_out_or_a_clear_error(dtype, T, h, log_scale, causal, seed):
    rng = np.random.default_rng(seed)
    scale = 10.0 ** min(log_scale, np.log10(float(np.finfo(dtype).max)) - 1)
    X = (rng.normal(size=(T, 4)) * scale).astype(dtype)
    W = layer_of(np.ones((1, 4), dtype), d_k=2, h=h, seed=seed)
    copies = [a.copy() for a in (X, *W)]
    for func in (mha.multi_head_attention, mha.attention_steps):
        try:
            result = func(X, *W, h=h, causal=causal)
        except CLEAR:
            continue
        Y, A = (result.output, result.weights) if func is mha.attention_steps else result
        assert np.isfinite(Y).all() and np.isfinite(A).all()
    for a, c in zip((X, *W), copies):
        np.testing.assert_array_equal(a, c)


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(st.sampled_from([np.float16, np.float32, np.float64]), hnp.array_shapes(min_dims=1, max_dims=3,
                                                                                          min_side=0, max_side=4),
                  elements=st.floats(-1e4, 1e4, width=16)),
       st.integers(-4, 4))
def test_softmax_finite_in_finite_out_or_a_clear_error(x, axis):
    before = x.copy()
    try:
        w = mha.softmax(x, axis=axis)
    except CLEAR:
        pass
    else:
        assert np.isfinite(w).all()
        np.testing.assert_allclose(w.astype(float).sum(axis=axis), 1.0, atol=2e-3)
    np.testing.assert_array_equal(x, before)


def test_a_whole_number_too_large_for_a_float_is_a_value_error():
    from mha._validate import check_number

    with pytest.raises(ValueError, match="x must be a finite number, got an integer with 401 digits"):
        check_number(10**400, "x")


def test_softmax_without_the_shift_only_where_the_scores_are_small():
    from mha._validate import score_dtype

    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(3, 6, 4))
    assert score_dtype(Q, K, V).small
    assert not score_dtype(Q * 30, K * 30, V).small  # |q.k|/sqrt(d_k) could pass 500 in float64
    Q32, K32, V32 = ((x * 8).astype(np.float32) for x in (Q, K, V))
    assert not score_dtype(Q32, K32, V32).small  # past 60 in float32
    # Both paths give the same weights (the shift changes nothing in exact arithmetic).
    for scale in (1.0, 3.0):
        out_s, A_s = mha.attention._attend(Q * scale, K, V, shift=True)
        out_n, A_n = mha.attention._attend(Q * scale, K, V, shift=False)
        np.testing.assert_allclose(A_n, A_s, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(out_n, out_s, rtol=1e-12, atol=1e-14)
