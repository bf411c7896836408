"""Exact (symbolic) algebra for the rank argument, with SymPy.

The chapters on narrow heads and the rank bound state a few facts that are
worth seeing with letters instead of numbers:

* with ``d_k = 1`` every row of scores is one number times the same row of keys;
* with ``d_k = 2`` the scores are a sum of two column-times-row matrices;
* the log of the "attend to yourself" target is ``a I + b J``, whose
  determinant is ``a**(n-1) * (a + n*b)``;
* subtracting each row's mean from ``log A`` keeps ``softmax`` unchanged and
  leaves a matrix of rank exactly ``n - 1``.

Every function returns SymPy objects, so a chapter can print them as they are
or substitute numbers.

Inputs are checked before SymPy sees them: sizes are integers, scalars are
real numbers or SymPy expressions, matrices are rectangular and non-empty.
Strings are refused everywhere (SymPy would evaluate them as code), and so
are NaN and infinities, in numbers and in expressions alike.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import sympy as sp

from ._validate import as_float_array, check_count, check_index, check_number, check_positive_int

__all__ = [
    "query_symbols",
    "rank_one_scores",
    "outer_product_expansion",
    "softmax_weight",
    "self_target",
    "a_I_plus_b_J",
    "det_a_I_plus_b_J",
    "centre_rows",
    "rank_factor",
]


_NOT_FINITE = (sp.nan, sp.zoo, sp.oo, -sp.oo)


def _refuse_text(x, name):
    """Raise if ``x`` is, or holds (in nested lists and tuples), a string."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name} holds the string {x!r:.40}; pass numbers or SymPy expressions, not text")
    if isinstance(x, (list, tuple)):
        for item in x:
            _refuse_text(item, name)


def _as_scalar(value, name):
    """``value`` as a SymPy expression: a real number or an expression without NaN or infinity."""
    if isinstance(value, sp.Expr):
        if value.has(*_NOT_FINITE):
            raise ValueError(f"{name} must be finite, got {value}")
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return sp.Integer(int(value))  # exact, however large
    return sp.Float(check_number(value, name))  # refuses bools, strings, arrays, NaN and infinities


def _as_matrix(M, name):
    """``M`` as a non-empty SymPy matrix of finite numbers or expressions."""
    if isinstance(M, np.ndarray):
        M = as_float_array(M, name)  # numeric arrays only; NaN and infinities refused with their index
    _refuse_text(M, name)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SymPy warns before we refuse entries that are not numbers
            M = sp.Matrix(M)
    except ValueError as err:
        raise ValueError(f"{name} could not be read as a rectangular matrix ({str(err).strip()})") from None
    except (TypeError, AttributeError, sp.SympifyError) as err:
        raise TypeError(f"{name} could not be read as a matrix ({str(err).strip()})") from None
    if M.rows == 0 or M.cols == 0:
        raise ValueError(f"{name} must not be empty, got shape {M.shape}")
    bad = [e for e in M if not isinstance(e, sp.Expr)]
    if bad:
        raise TypeError(f"{name} (shape {M.shape}) holds {bad[0]!r:.40}, which is not a number or an expression")
    if M.has(*_NOT_FINITE):
        raise ValueError(f"{name} (shape {M.shape}) holds NaN or an infinity; every entry must be finite")
    return M


def _as_keys(keys):
    """``keys`` as an (n, 1) column: one number (or expression) per token."""
    _refuse_text(keys, "keys")
    try:
        keys = list(keys)
    except TypeError:
        raise TypeError(f"keys must be a sequence of numbers, got {keys!r:.40} of type "
                        f"{type(keys).__name__}") from None
    K = _as_matrix(keys, "keys")
    if K.cols != 1:
        raise ValueError(f"keys must be a flat sequence (one number per token), got shape {K.shape}")
    return K


def _symbol_name(name):
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"name must be a letter or word such as 'q', got {name!r}")
    return name


def query_symbols(n, name="q"):
    """The unknown queries ``q_1, ..., q_n`` of a one-wide head, as real symbols.

    Examples
    --------
    >>> query_symbols(3)
    (q_1, q_2, q_3)
    """
    n = check_positive_int(n, "n")
    return sp.symbols(f"{_symbol_name(name)}_1:{n + 1}", real=True)


def rank_one_scores(keys, name="q"):
    r"""Scores of a head with ``d_k = 1``: :math:`S = Q K^\top`, queries left unknown.

    Parameters
    ----------
    keys : sequence of numbers or symbols, length n
        The single key coordinate of each token.
    name : str
        Letter for the unknown queries.

    Returns
    -------
    Q : Matrix, shape (n, 1)
        Unknown queries ``q_1 ... q_n``.
    K : Matrix, shape (n, 1)
    S : Matrix, shape (n, n)
        ``Q * K.T``: row ``r`` is ``q_r`` times the row of keys.

    Examples
    --------
    >>> _, _, S = rank_one_scores([2, 0, 1])
    >>> S
    Matrix([
    [2*q_1, 0, q_1],
    [2*q_2, 0, q_2],
    [2*q_3, 0, q_3]])
    """
    K = _as_keys(keys)
    Q = sp.Matrix(query_symbols(K.rows, name))  # (n, 1)
    return Q, K, Q * K.T  # (n, 1) @ (1, n) -> (n, n)


def outer_product_expansion(n, d_k):
    r"""Write :math:`Q K^\top` as a sum of ``d_k`` column-times-row terms.

    .. math:: Q K^\top = \sum_{c=1}^{d_k} \mathbf{q}^{(c)} \big(\mathbf{k}^{(c)}\big)^\top

    where :math:`\mathbf{q}^{(c)}` and :math:`\mathbf{k}^{(c)}` are column ``c`` of
    ``Q`` and of ``K``. Each term has rank at most one.

    Parameters
    ----------
    n : int
        Number of tokens (rows of ``Q`` and ``K``).
    d_k : int
        Head width (columns of ``Q`` and ``K``).

    Returns
    -------
    Q, K : Matrix, shape (n, d_k)
        Entries ``q_{r,c}`` and ``k_{j,c}``.
    S : Matrix, shape (n, n)
        The product ``Q * K.T``.
    terms : list of Matrix, each (n, n)
        ``Q[:, c] * K[:, c].T`` for every column ``c``; they add up to ``S``.

    Examples
    --------
    >>> Q, K, S, terms = outer_product_expansion(3, 2)
    >>> S == terms[0] + terms[1]
    True
    >>> terms[0]
    Matrix([
    [k_1_1*q_1_1, k_2_1*q_1_1, k_3_1*q_1_1],
    [k_1_1*q_2_1, k_2_1*q_2_1, k_3_1*q_2_1],
    [k_1_1*q_3_1, k_2_1*q_3_1, k_3_1*q_3_1]])
    """
    n = check_positive_int(n, "n")
    d_k = check_positive_int(d_k, "d_k")
    Q = sp.Matrix(n, d_k, lambda r, c: sp.Symbol(f"q_{r + 1}_{c + 1}", real=True))
    K = sp.Matrix(n, d_k, lambda j, c: sp.Symbol(f"k_{j + 1}_{c + 1}", real=True))
    S = Q * K.T  # (n, d_k) @ (d_k, n) -> (n, n)
    terms = [Q[:, c] * K[:, c].T for c in range(d_k)]  # each (n, 1) @ (1, n) -> (n, n)
    return Q, K, S, terms


def softmax_weight(keys, index, q=None):
    r"""Weight a one-wide head puts on token ``index`` when its query is ``q``.

    .. math:: w_j(q) = \frac{e^{q k_j}}{\sum_l e^{q k_l}}

    (with ``d_k = 1`` the scaling :math:`1/\sqrt{d_k}` is 1). The result is
    divided through by :math:`e^{q k_j}`, so it reads ``1 / (sum of exponentials)``.

    Parameters
    ----------
    keys : sequence of numbers, length n
    index : int
        The token whose weight is wanted (0-based).
    q : Symbol or number, optional
        The query; a new real symbol ``q`` by default.

    Returns
    -------
    Expr

    Examples
    --------
    >>> q = sp.Symbol("q", real=True)
    >>> w = softmax_weight([2, 0, 1], 2, q)
    >>> w
    1/(exp(q) + 1 + exp(-q))
    >>> sp.simplify((w - 1 / (1 + 2 * sp.cosh(q))).rewrite(sp.exp))
    0
    """
    K = _as_keys(keys)
    index = check_index(index, "index", K.rows)
    q = sp.Symbol("q", real=True) if q is None else _as_scalar(q, "q")
    total = sum(sp.exp(q * (k - K[index])) for k in K)
    return 1 / total


def self_target(n, p=sp.Rational(4, 5)):
    """The "attend to yourself" target: ``p`` on the diagonal, the rest shared equally.

    Parameters
    ----------
    n : int
        Number of tokens, at least 2.
    p : number, 0 < p < 1
        Weight on the diagonal; every other entry is ``(1 - p) / (n - 1)``.

    Returns
    -------
    Matrix, shape (n, n)
        Exact entries (rationals when ``p`` is rational); rows sum to 1.

    Examples
    --------
    >>> self_target(3)
    Matrix([
    [ 4/5, 1/10, 1/10],
    [1/10,  4/5, 1/10],
    [1/10, 1/10,  4/5]])
    """
    n = check_count(n, "n", low=2)
    p = sp.nsimplify(_as_scalar(p, "p"))
    if not (p.is_number and p.is_real and bool(0 < p < 1)):
        raise ValueError(f"p must be a number strictly between 0 and 1, got {p}")
    off = (1 - p) / (n - 1)
    return sp.Matrix(n, n, lambda r, j: p if r == j else off)


def a_I_plus_b_J(n, a=None, b=None):
    r"""The matrix :math:`aI + bJ` (``J`` all ones): ``a + b`` on the diagonal, ``b`` elsewhere.

    The log of :func:`self_target` has this form with
    :math:`a = \log p - \log q` and :math:`b = \log q`, where ``q`` is the
    off-diagonal weight.

    Examples
    --------
    >>> a_I_plus_b_J(2)
    Matrix([
    [a + b,     b],
    [    b, a + b]])
    """
    n = check_positive_int(n, "n")
    a = sp.Symbol("a", real=True) if a is None else _as_scalar(a, "a")
    b = sp.Symbol("b", real=True) if b is None else _as_scalar(b, "b")
    return a * sp.eye(n) + b * sp.ones(n, n)


def det_a_I_plus_b_J(n, a=None, b=None):
    r"""Determinant of :math:`aI + bJ`, factored: :math:`a^{n-1}(a + n b)`.

    Examples
    --------
    >>> det_a_I_plus_b_J(3)
    a**2*(a + 3*b)
    """
    return sp.factor(a_I_plus_b_J(n, a, b).det())


def centre_rows(L):
    r"""Add the per-row constant :math:`c = -\tfrac{1}{n} L \mathbf{1}`: every row then sums to 0.

    .. math:: M = L + \mathbf{c}\mathbf{1}^\top, \qquad c_r = -\frac{1}{n}\sum_j L_{rj}

    Softmax ignores a constant added to a row, so ``softmax(M) = softmax(L)``.
    Because ``M @ ones = 0``, ``M`` is singular: its rank is at most ``n - 1``.

    Parameters
    ----------
    L : matrix-like, shape (n, n)
        Numbers or expressions, finite; a non-square (m, n) matrix is centred
        row by row in the same way.

    Returns
    -------
    c : Matrix, shape (n, 1)
    M : Matrix, shape (n, n)

    Examples
    --------
    >>> c, M = centre_rows(a_I_plus_b_J(3))
    >>> M
    Matrix([
    [2*a/3,  -a/3,  -a/3],
    [ -a/3, 2*a/3,  -a/3],
    [ -a/3,  -a/3, 2*a/3]])
    >>> M.rank()
    2
    """
    L = _as_matrix(L, "L")
    n = L.cols
    ones = sp.ones(n, 1)
    c = -(L * ones) / n  # (n, n) @ (n, 1) -> (n, 1)
    M = (L + c * ones.T).applyfunc(sp.simplify)  # (n, 1) @ (1, n) -> (n, n)
    return c, M


def rank_factor(M):
    r"""Factor ``M`` as :math:`Q K^\top` with as few columns as its rank.

    Parameters
    ----------
    M : matrix-like, shape (n, n)

    Returns
    -------
    Q, K : Matrix, each shape (n, rank(M))
        ``Q * K.T == M``: a head of width ``rank(M)`` that builds these scores.

    Examples
    --------
    >>> Q, K = rank_factor([[2, -1, -1], [-1, 2, -1], [-1, -1, 2]])
    >>> Q.shape, (Q * K.T == sp.Matrix([[2, -1, -1], [-1, 2, -1], [-1, -1, 2]]))
    ((3, 2), True)
    """
    M = _as_matrix(M, "M")
    if M.is_zero_matrix:
        raise ValueError("M is the zero matrix; it has rank 0 and no factor with columns")
    C, F = M.rank_decomposition()  # (n, rank) @ (rank, n) -> (n, n)
    return C, F.T
