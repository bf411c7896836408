"""mha.symbolic: exact algebra behind the rank bound, checked against NumPy."""
import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import symbolic

small_ints = st.integers(min_value=-4, max_value=4)


def test_rank_one_scores_rows_are_multiples_of_the_keys():
    Q, K, S = symbolic.rank_one_scores([2, 0, 1])
    assert S.shape == (3, 3) and S.rank() == 1
    for r in range(3):
        assert S[r, :] == Q[r] * sp.Matrix([[2, 0, 1]])


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 4), d_k=st.integers(1, 3))
def test_outer_product_expansion_adds_up(n, d_k):
    Q, K, S, terms = symbolic.outer_product_expansion(n, d_k)
    assert len(terms) == d_k
    assert sp.expand(S - sum(terms, sp.zeros(n, n))) == sp.zeros(n, n)
    assert all(t.rank() <= 1 for t in terms)


def test_d_k_2_has_rank_at_most_2_for_every_numeric_choice():
    Q, K, S, _ = symbolic.outer_product_expansion(4, 2)
    rng = np.random.default_rng(0)
    for _ in range(5):
        values = {s: int(v) for s, v in zip(list(Q) + list(K), rng.integers(-3, 4, size=16))}
        assert S.subs(values).rank() <= 2


@settings(max_examples=30, deadline=None)
@given(keys=st.lists(small_ints, min_size=2, max_size=5), q=st.floats(-3, 3), data=st.data())
def test_softmax_weight_matches_mha_softmax(keys, q, data):
    index = data.draw(st.integers(0, len(keys) - 1))
    w = float(symbolic.softmax_weight(keys, index).subs(sp.Symbol("q", real=True), q))
    assert w == pytest.approx(mha.softmax(q * np.array(keys, float))[index], rel=1e-9)


def test_middle_key_peaks_at_one_third():
    q = sp.Symbol("q", real=True)
    w = symbolic.softmax_weight([2, 0, 1], 2, q)
    assert sp.solve(sp.diff(w, q), q) == [0]
    assert w.subs(q, 0) == sp.Rational(1, 3)
    assert sp.simplify((w - 1 / (1 + 2 * sp.cosh(q))).rewrite(sp.exp)) == 0


def test_self_target_rows_sum_to_one_and_bad_p():
    A = symbolic.self_target(5, sp.Rational(7, 10))
    assert all(sum(A[r, :]) == 1 for r in range(5))
    assert A[0, 0] == sp.Rational(7, 10) and A[0, 1] == sp.Rational(3, 40)
    with pytest.raises(ValueError, match="p must be"):
        symbolic.self_target(3, 1)
    with pytest.raises(ValueError, match="n must be an integer of at least 2"):
        symbolic.self_target(1)


@pytest.mark.parametrize("n", [2, 3, 4, 5])
def test_det_a_I_plus_b_J(n):
    a, b = sp.symbols("a b", real=True)
    assert sp.expand(symbolic.det_a_I_plus_b_J(n) - a ** (n - 1) * (a + n * b)) == 0


def test_log_target_det_is_minus_20_9():
    a = sp.log(sp.Rational(4, 5)) - sp.log(sp.Rational(1, 10))
    b = sp.log(sp.Rational(1, 10))
    det = symbolic.det_a_I_plus_b_J(3, a, b)
    assert float(det) == pytest.approx(-20.9, abs=0.05)
    L = symbolic.self_target(3).applyfunc(sp.log)
    assert sp.simplify(L - symbolic.a_I_plus_b_J(3, a, b)) == sp.zeros(3, 3)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 4), data=st.data())
def test_centre_rows_keeps_softmax_and_drops_rank_by_at_most_one(n, data):
    entries = data.draw(st.lists(small_ints, min_size=n * n, max_size=n * n))
    L = sp.Matrix(n, n, entries)
    c, M = symbolic.centre_rows(L)
    assert M * sp.ones(n, 1) == sp.zeros(n, 1)  # rows sum to zero
    assert M.rank() <= n - 1 and M.rank() >= L.rank() - 1
    Ln, Mn = (np.array(X.evalf(), dtype=float) for X in (L, M))
    np.testing.assert_allclose(mha.softmax(Mn), mha.softmax(Ln), rtol=1e-12)


def test_centred_log_target_has_rank_n_minus_1():
    for n in (3, 4, 5):
        _, M = symbolic.centre_rows(symbolic.a_I_plus_b_J(n))
        assert M.rank() == n - 1


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 4), data=st.data())
def test_rank_factor_rebuilds_the_matrix(n, data):
    entries = data.draw(st.lists(small_ints, min_size=n * n, max_size=n * n))
    M = sp.Matrix(n, n, entries)
    if M.is_zero_matrix:
        with pytest.raises(ValueError, match="zero matrix"):
            symbolic.rank_factor(M)
        return
    Q, K = symbolic.rank_factor(M)
    assert Q.shape == K.shape == (n, M.rank())
    assert Q * K.T == M


def test_bad_input_messages():
    with pytest.raises(TypeError, match="n must be a positive integer"):
        symbolic.outer_product_expansion(2.5, 1)
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        symbolic.outer_product_expansion(3, 0)
    with pytest.raises(ValueError, match="index=3 is out of range"):
        symbolic.softmax_weight([2, 0, 1], 3)
    with pytest.raises(ValueError, match="flat sequence"):
        symbolic.rank_one_scores([[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="L holds the string"):
        symbolic.centre_rows("not a matrix")
    with pytest.raises(ValueError, match="rectangular"):
        symbolic.centre_rows([[1, 2], [3]])
