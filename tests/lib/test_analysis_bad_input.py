"""The analysis modules under bad and degenerate input.

heads, stats, fitting, symbolic, costs, timing and papers: every bad argument gets a
ValueError or TypeError whose message names it; degenerate input that used to give NaN
is refused; NumPy scalars count as the numbers they are. The hypothesis properties
call every public function with finite input of any size, shape and magnitude: each
call returns finite numbers or refuses with a ValueError/TypeError (never another
exception, never NaN or infinity), and never changes its inputs.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

import mha
from mha import costs, fitting, heads, papers, stats, symbolic, timing

SUBJECT, OBJECT = [0.8, 0.1, 0.1], [0.1, 0.1, 0.8]
A3 = mha.softmax(np.random.default_rng(0).normal(size=(2, 3, 4, 4)), axis=-1)  # (L, h, T, T)


# ---- NumPy scalars are the numbers they are -------------------------------------------------

def test_numpy_scalars_are_accepted_as_numbers():
    fit = fitting.best_single_row([SUBJECT, OBJECT], tol=np.float32(1e-8), max_steps=np.int64(5000))
    assert fit.converged and fit.total_kl == pytest.approx(fitting.best_single_row([SUBJECT, OBJECT]).total_kl)
    a = fitting.fit_one_head(SUBJECT, np.int64(2), seed=np.int64(3), steps=np.int32(30), lr=np.float32(0.05))
    b = fitting.fit_one_head(SUBJECT, 2, seed=3, steps=30, lr=float(np.float32(0.05)))
    np.testing.assert_array_equal(a.row, b.row)
    values = np.array([[0.1, 0.9], [0.7, 0.2]])
    assert heads.heads_where(values, np.float32(0.5)) == heads.heads_where(values, 0.5) == [(0, 1), (1, 0)]
    s = heads.ablation_summary(values, n_top=np.int64(1), small=np.float32(0.15))
    assert s.top == [((0, 1), 0.9)] and s.share_small == 0.25
    assert heads.diagonal_mass(A3, np.int64(-1)).shape == (2, 3)
    assert symbolic.self_target(np.int64(2), np.float32(0.75))[0, 0] == sp.Rational(3, 4)
    assert costs.attention_param_count(np.int64(8), np.int32(2)) == 4 * 8 * 8


# ---- scalar arguments: bools, NaN, infinities, strings and arrays are refused by name --------

SCALAR_CASES = [
    # (call taking the bad value, argument name, bad value, error)
    (lambda v: fitting.best_single_row(SUBJECT, tol=v), "tol", np.inf, ValueError),
    (lambda v: fitting.best_single_row(SUBJECT, tol=v), "tol", np.nan, ValueError),
    (lambda v: fitting.best_single_row(SUBJECT, tol=v), "tol", 0.0, ValueError),
    (lambda v: fitting.best_single_row(SUBJECT, tol=v), "tol", -1e-9, ValueError),
    (lambda v: fitting.best_single_row(SUBJECT, tol=v), "tol", True, TypeError),
    (lambda v: fitting.best_single_row(SUBJECT, tol=v), "tol", "1e-9", TypeError),
    (lambda v: fitting.best_single_row(SUBJECT, tol=v), "tol", np.array([1e-9, 1e-9]), TypeError),
    (lambda v: fitting.best_single_row(SUBJECT, max_steps=v), "max_steps", 0, ValueError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, lr=v), "lr", 0.0, ValueError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, lr=v), "lr", np.inf, ValueError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, lr=v), "lr", 1e300, ValueError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, lr=v), "lr", True, TypeError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, lr=v), "lr", "0.1", TypeError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, steps=v), "steps", -3, ValueError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, steps=v), "steps", 10.0, TypeError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, seed=v), "seed", -1, ValueError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, seed=v), "seed", 1.5, TypeError),
    (lambda v: fitting.fit_one_head(SUBJECT, 2, seed=v), "seed", None, TypeError),
    (lambda v: heads.heads_where(np.ones((2, 2)), v), "threshold", np.nan, ValueError),
    (lambda v: heads.heads_where(np.ones((2, 2)), v), "threshold", -np.inf, ValueError),
    (lambda v: heads.heads_where(np.ones((2, 2)), v), "threshold", "0.5", TypeError),
    (lambda v: heads.heads_where(np.ones((2, 2)), v), "threshold", np.array([0.5]), TypeError),
    (lambda v: heads.ablation_summary(np.ones((2, 2)), n_top=v), "n_top", -1, ValueError),
    (lambda v: heads.ablation_summary(np.ones((2, 2)), n_top=v), "n_top", 2.0, TypeError),
    (lambda v: heads.ablation_summary(np.ones((2, 2)), n_top=v), "n_top", True, TypeError),
    (lambda v: heads.ablation_summary(np.ones((2, 2)), small=v), "small", np.nan, ValueError),
    (lambda v: heads.ablation_summary(np.ones((2, 2)), small=v), "small", np.inf, ValueError),
    (lambda v: heads.ablation_summary(np.ones((2, 2)), small=v), "small", False, TypeError),
    (lambda v: heads.diagonal_mass(A3, v), "offset", 1.0, TypeError),
    (lambda v: heads.diagonal_mass(A3, v), "offset", 4, ValueError),
    (lambda v: heads.position_mass(A3, v), "position", 4, ValueError),
    (lambda v: heads.position_mass(A3, v), "position", "0", TypeError),
    (lambda v: heads.check_layer(v, 3), "layer", 3, ValueError),
    (lambda v: heads.check_layer(v, 3), "layer", np.float64(1.0), TypeError),
    (lambda v: heads.check_layer(0, v), "L", 0, ValueError),
    (lambda v: heads.group_by_layer([(0, 0)], 2, v), "h", 2.5, TypeError),
    (lambda v: heads.remove_heads(np.ones((4, 2)), v, 2), "heads", 1.5, TypeError),
    (lambda v: heads.paraphrase_margins(np.ones((3, 2)), v), "n_items", 0, ValueError),
    (lambda v: heads.paraphrase_margins(np.ones((3, 2)), v), "n_items", 1.0, TypeError),
    (lambda v: symbolic.query_symbols(v), "n", 0, ValueError),
    (lambda v: symbolic.query_symbols(3, v), "name", "q r", TypeError),
    (lambda v: symbolic.softmax_weight([1, 2], v), "index", True, TypeError),
    (lambda v: symbolic.softmax_weight([1, 2], v), "index", -1, ValueError),
    (lambda v: symbolic.softmax_weight([1, 2], 0, v), "q", np.nan, ValueError),
    (lambda v: symbolic.softmax_weight([1, 2], 0, v), "q", "q", TypeError),
    (lambda v: symbolic.self_target(3, v), "p", np.nan, ValueError),
    (lambda v: symbolic.self_target(3, v), "p", 1.0, ValueError),
    (lambda v: symbolic.self_target(3, v), "p", "1/2", TypeError),
    (lambda v: symbolic.a_I_plus_b_J(2, v), "a", np.inf, ValueError),
    (lambda v: symbolic.a_I_plus_b_J(2, 1, v), "b", sp.zoo, ValueError),
    (lambda v: symbolic.det_a_I_plus_b_J(2, v), "a", True, TypeError),
    (lambda v: costs.attention_param_count(8, 2, bias=v), "bias", "False", TypeError),
    (lambda v: costs.attention_param_count(8, 2, bias=v), "bias", 0, TypeError),
    (lambda v: costs.attention_flops(v, 8, 2), "T", 0, ValueError),
    (lambda v: costs.attention_flops(v, 8, 2), "T", 3.0, TypeError),
    (lambda v: costs.score_entries(4, 2, batch=v), "batch", -1, ValueError),
    (lambda v: costs.get_model(v), "name", 3, TypeError),
    (lambda v: timing.best_time(np.ones, 3, repeat=v), "repeat", True, TypeError),
    (lambda v: timing.best_time(np.ones, 3, number=v), "number", 0, ValueError),
    (lambda v: papers.HeadCountRow(h=v, d_k=64, d_v=64, dev_ppl=4.9, dev_bleu=25.8), "h", 0, ValueError),
    (lambda v: papers.HeadCountRow(h=8, d_k=64, d_v=64, dev_ppl=v, dev_bleu=25.8), "dev_ppl", np.nan, ValueError),
    (lambda v: papers.HeadCountRow(h=8, d_k=64, d_v=64, dev_ppl=4.9, dev_bleu=v), "dev_bleu", 101.0, ValueError),
    (lambda v: papers.HeadCountRow(h=8, d_k=64, d_v=64, dev_ppl=4.9, dev_bleu=25.8, params_m=v), "params_m", 0, ValueError),
]


@pytest.mark.parametrize("call, name, value, error", SCALAR_CASES,
                         ids=[f"{c[1]}={c[2]!r}" for c in SCALAR_CASES])
def test_bad_scalars_are_refused_by_name(call, name, value, error):
    with pytest.raises(error) as info:
        call(value)
    assert name in str(info.value), f"{name!r} missing from {str(info.value)!r}"


# ---- degenerate input that used to give NaN: refused, with the argument named ---------------

DEGENERATE_CASES = [
    # (what, call, error, words the message must contain)
    ("entropy of heads with no rows", lambda: stats.head_entropy(np.zeros((2, 0, 3))), ValueError,
     ["A", "(2, 0, 3)", "no query rows"]),
    ("entropy of empty rows", lambda: stats.row_entropy(np.zeros((3, 0))), ValueError, ["A", "empty last axis"]),
    ("drift of a zero vector", lambda: heads.cosine_drift(np.zeros((1, 2, 3)), np.ones((2, 3))), ValueError,
     ["E", "zero vector", "(0, 0)"]),
    ("drift against a zero reference", lambda: heads.cosine_drift(np.ones((2, 3)), np.zeros((2, 3))),
     ValueError, ["E_ref", "zero vector"]),
    ("drift of vectors of length 0", lambda: heads.cosine_drift(np.ones((2, 0)), np.ones((2, 0))), ValueError,
     ["E", "d = 0"]),
    ("margin with a zero sentence", lambda: heads.paraphrase_margins(np.eye(3)[[0, 1, 1]] * [[1], [0], [1]], 1),
     ValueError, ["E", "zero vector"]),
    ("margins with too few sentences", lambda: heads.paraphrase_margins(np.ones((2, 4)), 1), ValueError,
     ["E", "3*n_items = 3", "(2, 4)"]),
    ("median of no heads", lambda: heads.ablation_summary(np.zeros((0, 4))), ValueError,
     ["damage", "empty", "(0, 4)"]),
    ("removing heads from a W_O without rows", lambda: heads.remove_heads(np.zeros((0, 3)), [0], 2), ValueError,
     ["W_O", "no rows"]),
    ("value norms of heads of width 0", lambda: heads.value_norms(np.ones((2, 3, 0)), np.ones((0, 4)), 2),
     ValueError, ["W_O", "no rows"]),
    ("bias of the wrong width", lambda: heads.without_each_head(np.ones((3, 4)), np.ones((4, 2)), 2, np.ones(3)),
     ValueError, ["b_O", "(2,)", "(3,)"]),
    ("weights that are not probabilities", lambda: heads.previous_token_mass(np.ones((3, 3))), ValueError,
     ["A", "sum to 1"]),
    ("weighted norms of mismatched heads",
     lambda: heads.weighted_value_norms(np.full((3, 2, 2), 0.5), np.ones((2, 2, 1)), np.ones((2, 3)), 2),
     ValueError, ["A", "(3, 2, 2)", "h=2"]),
    ("tol = inf would call anything converged", lambda: fitting.best_single_row(SUBJECT, tol=math.inf),
     ValueError, ["tol", "finite"]),
    ("an lr so large the scores overflow", lambda: fitting.fit_one_head(SUBJECT, 4, lr=1e200), ValueError,
     ["lr", "at most 10"]),
    ("zero steps", lambda: fitting.fit_one_head(SUBJECT, 4, steps=0), ValueError, ["steps", "positive"]),
    ("targets with no rows", lambda: fitting.best_single_row(np.zeros((0, 3))), ValueError,
     ["targets", "n >= 1"]),
    ("KL against a q of zero", lambda: fitting.kl_divergence([0.5, 0.5], [1.0, 0.0]), ValueError,
     ["q is 0", "infinite", "(1,)"]),
    ("KL against a negative q", lambda: fitting.kl_divergence([0.5, 0.5], [1.5, -0.5]), ValueError,
     ["q", "-0.5", "never negative"]),
    ("KL against a q that does not sum to 1", lambda: fitting.kl_divergence([0.5, 0.5], [0.2, 0.2]), ValueError,
     ["q", "sum to 1"]),
    ("KL of rows that do not broadcast", lambda: fitting.kl_divergence(np.full((2, 2), 0.5), np.full((3, 2), 0.5)),
     ValueError, ["p", "(2, 2)", "(3, 2)", "broadcast"]),
    ("parameters of a zero-width layer", lambda: costs.attention_param_count(0, 1), ValueError, ["d", "0"]),
    ("FLOPs with negative heads", lambda: costs.attention_flops(4, 8, -2), ValueError, ["h", "-2"]),
    ("cache bytes of a fractional layer count", lambda: costs.kv_cache_bytes(2.5, 8, 128, 10), TypeError,
     ["n_layers", "2.5"]),
    ("a model whose key/value heads do not divide h",
     lambda: costs.ModelConfig("x", 1, 8, 4, 3, 2, 16, False, "ref"), ValueError, ["n_kv_heads=3", "h=4"]),
    ("head loop on no positions", lambda: mha.attention.multi_head_attention_loop(np.ones((0, 2)), *[np.eye(2)] * 4, 1),
     ValueError, ["X", "T >= 1"]),
    ("head loop with heads of width 0",
     lambda: mha.attention.multi_head_attention_loop(np.ones((2, 2)), np.ones((2, 0)), np.ones((2, 0)), np.eye(2),
                                              np.eye(2), 1), ValueError, ["W_Q", "d_k >= 1"]),
    ("head loop on numbers too large for float64",
     lambda: mha.attention.multi_head_attention_loop(np.full((2, 2), 1e200), *[np.eye(2)] * 4, 1), ValueError,
     ["X", "overflow float64"]),
    ("symbolic matrix with NaN", lambda: symbolic.centre_rows([[1, float("nan")], [0, 1]]), ValueError,
     ["L", "NaN"]),
    ("symbolic NumPy matrix with inf", lambda: symbolic.rank_factor(np.array([[1.0, np.inf]])), ValueError,
     ["M", "inf"]),
    ("empty symbolic matrix", lambda: symbolic.rank_factor([]), ValueError, ["M", "empty"]),
    ("keys with an infinity", lambda: symbolic.rank_one_scores([1, sp.oo]), ValueError, ["keys", "infinity"]),
    ("keys that are text", lambda: symbolic.softmax_weight("123", 0), TypeError, ["keys", "string"]),
    ("matrix entries that are not numbers", lambda: symbolic.rank_factor([[None, 1]]), TypeError,
     ["M", "None"]),
    ("no rows to compare", lambda: papers.best_bleu(iter([])), TypeError, ["rows", "non-empty"]),
    ("rows that are not a sequence", lambda: papers.best_bleu(5), TypeError, ["rows", "int"]),
]


@pytest.mark.parametrize("what, call, error, words", DEGENERATE_CASES, ids=[c[0] for c in DEGENERATE_CASES])
def test_degenerate_input_is_refused_clearly(what, call, error, words):
    with pytest.raises(error) as info:
        call()
    for word in words:
        assert word in str(info.value), f"{what}: {word!r} missing from {str(info.value)!r}"


def test_well_defined_edge_results_are_finite():
    # Defined by the maths, so returned rather than refused.
    assert stats.row_entropy(np.zeros((0, 3))).shape == (0,)               # no rows: no entropies
    assert heads.cosine_drift(np.array([[1e300, 1e300]]), np.array([[1e-300, 1e-300]]))[0] == pytest.approx(0)
    np.testing.assert_allclose(heads.cosine_drift(np.array([[1.0, 0.0]]), np.array([[-1.0, 0.0]])), [2.0])
    assert heads.ablation_summary(np.full((1, 2), 1.7e308)).median == 1.7e308  # no overflow in the mean of two
    assert fitting.kl_divergence([0.5, 0.5], [1 - 5e-324, 5e-324]) == pytest.approx(
        0.5 * (np.log(0.5) - np.log(5e-324)) + 0.5 * np.log(0.5), rel=1e-12)  # huge ratio, finite
    fit = fitting.best_single_row([SUBJECT, OBJECT], max_steps=3)
    assert not fit.converged and np.isfinite(fit.total_kl)


def test_targets_in_float32_still_converge():
    # float32 rows sum to 1 only to ~1e-7; the fit rescales them in float64, so the gradient can vanish.
    t = mha.softmax(np.array([[2.0, 0.1, -1.0], [0.3, 0.2, 0.1]], dtype=np.float32))
    fit = fitting.best_single_row(t)
    assert fit.converged
    np.testing.assert_allclose(fit.row, t.astype(np.float64).mean(axis=0), atol=1e-7)


# ---- hypothesis: finite in, finite out (or a clear refusal), inputs untouched ----------------

REFUSED = object()
floats = st.floats(allow_nan=False, allow_infinity=False)  # every finite float, 1e-308 to 1.7e308
moderate = st.floats(-1e3, 1e3, allow_nan=False)


def any_array(max_dims=4, elements=floats, dtype=np.float64):
    return arrays(dtype, array_shapes(min_dims=0, max_dims=max_dims, min_side=0, max_side=4), elements=elements)


@st.composite
def prob_rows(draw, min_dims=1, max_dims=4, square=False):
    """Rows of probabilities (some with exact zeros), or, now and then, any finite array."""
    if draw(st.integers(0, 4)) == 0:
        return draw(any_array(max_dims))
    shape = list(draw(array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=4)))
    if square and len(shape) >= 2:
        shape[-1] = shape[-2]
    logits = draw(arrays(np.float64, tuple(shape), elements=st.floats(-30, 30)))
    zeros = draw(arrays(np.bool_, tuple(shape)))
    if shape[-1]:
        zeros[..., 0] = False  # every row keeps some weight
    logits = np.where(zeros, -np.inf, logits)
    return mha.softmax(logits, axis=-1) if 0 not in shape else np.zeros(shape)


def mostly(valid, bad):
    """Valid values three times in four, so that the checks and the maths both get exercised."""
    return st.one_of(valid, valid, valid, bad)


bad_scalars = st.sampled_from([True, 2.0, "2", None, -1, np.array([1, 2])])
small_ints = mostly(st.integers(0, 4), bad_scalars)
positive_ints = mostly(st.integers(1, 4), bad_scalars)
scalar_nums = mostly(st.one_of(floats, st.just(np.float32(0.25)), st.just(np.int64(1))),
                     st.sampled_from([True, "0.5", np.array([0.5, 0.5])]))


@st.composite
def arrays_of(draw, shape, elements=None):
    """An array of ``shape`` (float64 or float32); one time in five any array instead."""
    if draw(st.integers(0, 4)) == 0:
        return draw(any_array(4))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    return draw(arrays(dtype, shape, elements=draw(st.sampled_from([floats, moderate])).filter(
        lambda x: dtype is np.float64 or abs(x) < 3e38)))


lead_shapes = array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3)


def is_finite(result) -> bool:
    if isinstance(result, np.ndarray):
        return result.dtype.kind not in "fc" or bool(np.isfinite(result).all())
    if isinstance(result, (float, np.floating)):
        return math.isfinite(result)
    if isinstance(result, sp.MatrixBase):
        return not result.has(sp.nan, sp.zoo, sp.oo, -sp.oo)
    if isinstance(result, sp.Basic):
        return not result.has(sp.nan, sp.zoo, sp.oo, -sp.oo)
    if dataclasses.is_dataclass(result):
        return all(is_finite(getattr(result, f.name)) for f in dataclasses.fields(result))
    if isinstance(result, dict):
        return all(is_finite(v) for v in result.values())
    if isinstance(result, (list, tuple)):
        return all(is_finite(v) for v in result)
    return True  # ints, bools, strings, None


def same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(a == b)


def outcome(func, *args, **kwargs):
    """``func(*args, **kwargs)`` or REFUSED (a clear ValueError/TypeError); never NaN, inputs never changed."""
    before = copy.deepcopy((args, kwargs))
    try:
        result = func(*args, **kwargs)
    except (ValueError, TypeError) as err:
        assert str(err), f"{func.__name__} refused with an empty message"
        result = REFUSED
    assert same(before, (args, kwargs)), f"{func.__name__} changed its input"
    assert result is REFUSED or is_finite(result), f"{func.__name__} returned a non-finite result: {result!r}"
    return result


pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning",
                                        "ignore:invalid value encountered:RuntimeWarning")
FEW = settings(max_examples=60, deadline=None)


@FEW
@given(A=prob_rows(min_dims=1, max_dims=4))
def test_entropies(A):
    outcome(stats.row_entropy, A)
    H = outcome(stats.head_entropy, A)
    if H is not REFUSED:
        assert (H >= 0).all() and (H <= np.log(A.shape[-1]) + 1e-9).all()


@FEW
@given(A=prob_rows(min_dims=1, max_dims=4, square=True), offset=mostly(st.integers(-4, 4), bad_scalars),
       position=mostly(st.integers(-4, 4), bad_scalars))
def test_specialisation_measures(A, offset, position):
    for result in (outcome(heads.diagonal_mass, A, offset), outcome(heads.previous_token_mass, A),
                   outcome(heads.next_token_mass, A), outcome(heads.position_mass, A, position)):
        if result is not REFUSED:
            assert ((result >= -1e-12) & (result <= 1 + 1e-12)).all()  # a mean of weights
    outcome(heads.profile_heads, A)


@FEW
@given(L=st.integers(0, 3), h=st.integers(0, 3), data=st.data(), threshold=scalar_nums, n_top=small_ints,
       small=scalar_nums)
def test_selection_and_summary(L, h, data, threshold, n_top, small):
    table = data.draw(arrays_of((L, h)))
    outcome(heads.heads_where, table, threshold)
    s = outcome(heads.ablation_summary, table, n_top=n_top, small=small)
    if s is not REFUSED:
        assert table.min() <= s.median <= table.max()


@FEW
@given(layer=small_ints, L=positive_ints, h=positive_ints,
       pairs=mostly(st.lists(st.tuples(small_ints, small_ints), max_size=3), st.sampled_from([3, [(1,)], "ab"])))
def test_layer_and_head_indices(layer, L, h, pairs):
    outcome(heads.check_layer, layer, L)
    groups = outcome(heads.group_by_layer, pairs, L, h)
    if groups is not REFUSED:
        assert sum(map(len, groups)) == len(pairs)


@FEW
@given(h=positive_ints, d_v=st.integers(0, 3), d_out=st.integers(0, 3), T=st.integers(0, 3), S=st.integers(0, 3),
       lead=lead_shapes, removed=mostly(st.lists(small_ints, max_size=3), small_ints), data=st.data())
def test_removal_and_value_norms(h, d_v, d_out, T, S, lead, removed, data):
    n = h if type(h) is int and h > 0 else 2
    W_O = data.draw(arrays_of((n * d_v, d_out)))
    concat = data.draw(arrays_of((*lead, T, n * d_v)))
    bias = data.draw(st.one_of(st.none(), arrays_of((d_out,))))
    V_heads = data.draw(arrays_of((*lead, n, S, d_v)))
    A = data.draw(st.one_of(prob_rows(min_dims=3, max_dims=4), st.just(np.full((*lead, n, T, S), 1 / max(S, 1)))))
    outcome(heads.remove_heads, W_O, removed, h)
    outcome(heads.without_each_head, concat, W_O, h, bias)
    outcome(heads.value_norms, V_heads, W_O, h)
    outcome(heads.weighted_value_norms, A, V_heads, W_O, h)


@FEW
@given(B=st.integers(0, 4), d=st.integers(0, 3), lead=lead_shapes, n_items=positive_ints, data=st.data())
def test_drift_and_margins(B, d, lead, n_items, data):
    E_ref = data.draw(arrays_of((B, d)))
    E = data.draw(arrays_of((*lead, B, d)))
    drift = outcome(heads.cosine_drift, E, E_ref)
    if drift is not REFUSED:
        assert ((drift >= 0) & (drift <= 2)).all()
    n = n_items if type(n_items) is int and n_items > 0 else 1
    margins = outcome(heads.paraphrase_margins, data.draw(arrays_of((*lead, 3 * n, d))), n_items)
    if margins is not REFUSED:
        assert (np.abs(margins) <= 2 + 1e-6).all()


@FEW
@given(p=prob_rows(max_dims=3), q=prob_rows(max_dims=3))
def test_kl_divergence(p, q):
    kl = outcome(fitting.kl_divergence, p, q)
    if kl is not REFUSED:
        assert (kl >= 0).all()
    same_rows = outcome(fitting.kl_divergence, p, p)
    if same_rows is not REFUSED:
        np.testing.assert_allclose(same_rows, 0, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 3), S=st.integers(1, 4), data=st.data(),
       tol=mostly(st.floats(1e-12, 1.0), scalar_nums), max_steps=mostly(st.integers(1, 200), bad_scalars),
       d_k=positive_ints, seed=small_ints, steps=mostly(st.integers(1, 30), bad_scalars),
       lr=mostly(st.floats(1e-6, 10.0), scalar_nums))
def test_fits(n, S, data, tol, max_steps, d_k, seed, steps, lr):
    targets = data.draw(st.one_of(prob_rows(min_dims=2, max_dims=2).filter(lambda t: t.shape[:1] != (0,)),
                                  st.just(mha.softmax(np.zeros((n, S)), axis=-1))))
    fit = outcome(fitting.best_single_row, targets, tol=tol, max_steps=max_steps)
    if fit is not REFUSED:
        assert np.isclose(fit.row.sum(), 1) and (fit.kl >= 0).all()
        t = targets / targets.sum(axis=-1, keepdims=True)
        gradient = np.abs((fit.row - t).sum(axis=0)).max()
        assert not fit.converged or gradient < float(tol)  # "converged" means the gradient is below tol
    outcome(fitting.fit_one_head, targets, d_k, seed=seed, steps=steps, lr=lr)


symbolic_numbers = st.one_of(st.integers(-5, 5), st.floats(-1e6, 1e6, allow_nan=False), st.just(sp.Symbol("x")))
symbolic_entries = mostly(symbolic_numbers, st.sampled_from([float("nan"), sp.oo, "x", None, True]))


@settings(max_examples=40, deadline=None)
@given(n=positive_ints, d_k=positive_ints, rows=st.integers(0, 3), cols=st.integers(0, 3), index=small_ints,
       p=mostly(st.floats(0.01, 0.99), symbolic_entries), scalar=symbolic_entries, data=st.data())
def test_symbolic(n, d_k, rows, cols, index, p, scalar, data):
    entries = data.draw(st.lists(st.lists(symbolic_entries, min_size=cols, max_size=cols),
                                 min_size=rows, max_size=rows))
    keys = data.draw(mostly(st.lists(symbolic_numbers, min_size=1, max_size=4), st.lists(symbolic_entries, max_size=4)))
    outcome(symbolic.query_symbols, n)
    outcome(symbolic.outer_product_expansion, n, d_k)
    outcome(symbolic.self_target, n, p)
    outcome(symbolic.a_I_plus_b_J, n, scalar)
    outcome(symbolic.det_a_I_plus_b_J, n, 1, scalar)
    outcome(symbolic.rank_one_scores, keys)
    outcome(symbolic.softmax_weight, keys, index, scalar)
    outcome(symbolic.centre_rows, entries)
    outcome(symbolic.rank_factor, entries)


@st.composite
def layer_sizes(draw):
    """(d, h, d_k, g): consistent most of the time, any one of them spoiled otherwise."""
    g = draw(st.integers(1, 4))
    h = g * draw(st.integers(1, 3))
    sizes = [h * draw(st.integers(1, 8)), h, draw(st.one_of(st.none(), st.integers(1, 64))), g]
    if draw(st.integers(0, 3)) == 0:
        sizes[draw(st.integers(0, 3))] = draw(st.sampled_from([0, -2, 3, True, 8.0, "8", None]))
    return sizes


@FEW
@given(sizes=layer_sizes(), T=positive_ints, bias=mostly(st.booleans(), st.just(1)),
       name=mostly(st.sampled_from([m.name for m in costs.MODELS]), st.one_of(st.text(max_size=8), st.just(3))))
def test_costs(sizes, T, bias, name):
    d, h, d_k, g = sizes
    n = outcome(costs.attention_param_count, d, h, d_k=d_k, bias=bias, n_kv_heads=g)
    f = outcome(costs.attention_flops, T, d, h, d_k=d_k, n_kv_heads=g)
    for result in (n, outcome(costs.score_entries, T, h), outcome(costs.kv_cache_bytes_per_token, g, d_k),
                   outcome(costs.kv_cache_bytes, T, g, d_k, T), outcome(costs.gpt2_param_count, T, d, h, T)):
        assert result is REFUSED or (isinstance(result, int) and result > 0)
    if f is not REFUSED:
        assert f.total > 0
    model = outcome(costs.get_model, name)
    if model is not REFUSED:
        assert model.name == name
        cache = outcome(model.kv_cache_bytes, T)
        assert cache is REFUSED or cache > 0
    config = outcome(costs.ModelConfig, "m", T, d, h, g, d_k, 16, bias, "ref")
    if config is not REFUSED:
        assert config.params_per_layer == n


@FEW
@given(h=positive_ints, d_k=mostly(st.integers(1, 3), st.just(0)), d_v=st.integers(0, 3), d=st.integers(0, 4),
       T=mostly(st.integers(1, 3), st.just(0)),
       lead=lead_shapes, repeat=positive_ints, data=st.data())
def test_head_loop_and_timers(h, d_k, d_v, d, T, lead, repeat, data):
    n = h if type(h) is int and h > 0 else 1
    X = data.draw(arrays_of((*lead, T, d)))
    W = [data.draw(arrays_of(shape)) for shape in ((d, n * d_k), (d, n * d_k), (d, n * d_v), (n * d_v, d))]
    Y = outcome(mha.attention.multi_head_attention_loop, X, *W, h)  # equality with the batched layer: test_costs.py
    if Y is not REFUSED:
        assert Y.shape == (*X.shape[:-1], d)
    outcome(timing.best_time, abs, -1, repeat=repeat, number=1)
    outcome(timing.best_times, {"abs": lambda: abs(-1)}, repeat=repeat)


@FEW
@given(h=positive_ints, d_k=positive_ints, ppl=mostly(st.floats(1, 100), scalar_nums),
       bleu=mostly(st.floats(0, 100), scalar_nums))
def test_published_rows(h, d_k, ppl, bleu):
    row = outcome(papers.HeadCountRow, h, d_k, d_k, ppl, bleu)
    if row is not REFUSED:
        top, hs = outcome(papers.best_bleu, [row, papers.VASWANI2017_BASE])
        assert top == max(row.dev_bleu, 25.8) and hs
    outcome(papers.best_bleu, [row] if row is not REFUSED else [(h, d_k, d_k, ppl, bleu)])
