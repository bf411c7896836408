"""Every bad input gets a clear ValueError/TypeError that names the argument and the shapes."""

import numpy as np
import pytest

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
