r"""What trained heads do: measures of specialisation, and switching heads off.

Pure analysis on arrays; nothing here knows about a particular model.

*Specialisation.* For one head with weights :math:`a_{t,s}` (query ``t``,
key ``s``) over ``T`` positions:

* previous-token mass :math:`\frac{1}{T-1}\sum_{t=1}^{T-1} a_{t,t-1}`,
* next-token mass :math:`\frac{1}{T-1}\sum_{t=0}^{T-2} a_{t,t+1}`,
* mass on a position :math:`p` (such as ``[CLS]`` at 0 or ``[SEP]`` at ``T-1``):
  :math:`\frac{1}{T}\sum_{t} a_{t,p}`,
* entropy :func:`mha.stats.head_entropy`.

*Ablation.* The layer's output is :math:`\operatorname{Concat}(Z_1,\dots,Z_h)\,W^O
= \sum_i Z_i W^O_i`, where :math:`W^O_i` are the ``d_v`` rows of :math:`W^O` that
meet head ``i``. Zeroing head ``i``'s slice of the concatenation before
:math:`W^O` removes exactly the term :math:`Z_i W^O_i`; zeroing the rows
:math:`W^O_i` does the same.

Shape legend as in :mod:`mha.attention`; ``L`` layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, check_ndim, check_positive_int
from .stats import head_entropy

__all__ = [
    "diagonal_mass", "previous_token_mass", "next_token_mass", "position_mass", "HeadProfile",
    "profile_heads", "heads_where", "check_layer", "group_by_layer", "remove_heads", "without_each_head", "value_norms",
    "weighted_value_norms", "cosine_drift", "paraphrase_margins", "ablation_summary", "AblationSummary",
]


def _weights(A, name="A"):
    A = as_float_array(A, name)
    check_ndim(A, name, 2, "(..., T, T)")
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{name} must be self-attention weights (..., T, T), got shape {A.shape}")
    return A


def diagonal_mass(A, offset):
    r"""Mean weight each query puts on the key ``offset`` places away: (..., T, T) -> (...).

    ``offset = -1`` is the previous token, ``+1`` the next one. Only the
    :math:`T - |\text{offset}|` queries that have such a key are averaged.

    Examples
    --------
    >>> A = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    >>> float(diagonal_mass(A, -1))      # rows 1 and 2 put 1.0 and 0.5 on the token before
    0.75
    """
    A = _weights(A)
    T = A.shape[-1]
    if not isinstance(offset, (int, np.integer)) or not 0 < abs(offset) < T:
        raise ValueError(f"offset must be a non-zero integer with |offset| < T={T}, got {offset!r}")
    return np.diagonal(A, offset=int(offset), axis1=-2, axis2=-1).mean(axis=-1)  # (..., T-|o|) -> (...)


def previous_token_mass(A):
    """Mean weight on the token just before each query: (..., T, T) -> (...)."""
    return diagonal_mass(A, -1)


def next_token_mass(A):
    """Mean weight on the token just after each query: (..., T, T) -> (...)."""
    return diagonal_mass(A, 1)


def position_mass(A, position):
    """Mean weight that the queries put on one key position: (..., T, T) -> (...).

    >>> float(position_mass(np.array([[1.0, 0.0], [0.6, 0.4]]), 0))
    0.8
    """
    A = _weights(A)
    T = A.shape[-1]
    if not isinstance(position, (int, np.integer)) or not -T <= position < T:
        raise ValueError(f"position must be an integer in range for T={T}, got {position!r}")
    return A[..., :, int(position)].mean(axis=-1)  # (..., T) -> (...)


@dataclass(frozen=True)
class HeadProfile:
    """Per-head measures of one model on one text; each array has shape (L, h).

    Attributes
    ----------
    previous, next, first, last : ndarray
        Mean weight on the previous token, the next token, the first
        position (``[CLS]``, or the first token of a causal model) and the
        last position (``[SEP]``).
    entropy : ndarray
        Mean row entropy in nats (:func:`mha.stats.head_entropy`).
    """

    previous: np.ndarray
    next: np.ndarray
    first: np.ndarray
    last: np.ndarray
    entropy: np.ndarray

    def table(self):
        """The measures as a dict of flat arrays, with ``layer`` and ``head`` columns."""
        L, h = self.previous.shape
        layer, head = np.divmod(np.arange(L * h), h)
        return {"layer": layer, "head": head, **{k: getattr(self, k).ravel() for k in
                                                 ("previous", "next", "first", "last", "entropy")}}


def profile_heads(A):
    """Measure every head: ``A`` has shape (L, h, T, T), one text's attention in every layer.

    Examples
    --------
    >>> A = np.stack([np.eye(3), np.eye(3, k=-1) + np.eye(3)[[0]] * [[1], [0], [0]]])[None]
    >>> p = profile_heads(A)           # head 0 looks at itself, head 1 at the token before
    >>> p.previous.round(2), p.first.round(2)
    (array([[0., 1.]]), array([[0.33, 0.67]]))
    """
    A = _weights(A)
    check_ndim(A, "A", 4, "(L, h, T, T)", exact=True)
    if A.shape[-1] < 2:
        raise ValueError(f"A needs at least 2 positions to measure neighbours, got shape {A.shape}")
    return HeadProfile(previous=previous_token_mass(A), next=next_token_mass(A),
                       first=position_mass(A, 0), last=position_mass(A, -1), entropy=head_entropy(A))


def heads_where(values, threshold):
    """The ``(layer, head)`` pairs whose value exceeds ``threshold``, largest first.

    >>> heads_where(np.array([[0.1, 0.9], [0.7, 0.2]]), 0.5)
    [(0, 1), (1, 0)]
    """
    values = as_float_array(values, "values")
    check_ndim(values, "values", 2, "(L, h)", exact=True)
    order = np.argsort(-values, axis=None, kind="stable")
    return [tuple(int(i) for i in np.unravel_index(k, values.shape)) for k in order
            if values.flat[k] > threshold]


def _is_index(i, n):
    return not isinstance(i, (bool, np.bool_)) and isinstance(i, (int, np.integer)) and 0 <= i < n


def check_layer(layer, L):
    """``layer`` as an int if it is a valid layer index, else ``ValueError``."""
    if not _is_index(layer, L):
        raise ValueError(f"layer {layer!r} is out of range 0..{L - 1}")
    return int(layer)


def group_by_layer(pairs, L, h):
    """Sort ``(layer, head)`` pairs into one list of heads per layer.

    >>> group_by_layer([(0, 2), (1, 0), (0, 1)], L=2, h=3)
    [[2, 1], [0]]
    """
    out = [[] for _ in range(L)]
    for pair in pairs:
        try:
            layer, head = pair
        except (TypeError, ValueError):
            raise TypeError(f"expected (layer, head) pairs, got {pair!r}") from None
        if not _is_index(head, h):
            raise ValueError(f"head {head!r} in {pair!r} is out of range 0..{h - 1}")
        out[check_layer(layer, L)].append(int(head))
    return out


def _head_list(heads, h):
    heads = [heads] if isinstance(heads, (int, np.integer)) else list(heads)
    for i in heads:
        if not _is_index(i, h):
            raise ValueError(f"heads must be integers in 0..{h - 1}, got {i!r}")
    return [int(i) for i in heads]


def remove_heads(W_O, heads, h):
    r"""``W^O`` with the rows that meet the given heads set to zero.

    :math:`\operatorname{Concat}(Z_1,\dots,Z_h)\,W^O = \sum_i Z_i W^O_i`, so
    zeroing the rows :math:`W^O_i` removes head ``i``'s contribution, exactly
    as zeroing its slice of the concatenation would.

    Parameters
    ----------
    W_O : array_like, shape (h*d_v, d_out)
    heads : int or iterable of int
    h : int

    Examples
    --------
    >>> remove_heads(np.ones((4, 1)), [1], h=2).ravel()      # d_v = 2: rows 2 and 3 meet head 1
    array([1., 1., 0., 0.])
    """
    W_O = as_float_array(W_O, "W_O")
    check_ndim(W_O, "W_O", 2, "(h*d_v, d_out)", exact=True)
    h = check_positive_int(h, "h")
    if W_O.shape[0] % h:
        raise ValueError(f"W_O has {W_O.shape[0]} rows (shape {W_O.shape}), not divisible by h={h}")
    d_v = W_O.shape[0] // h
    out = np.array(W_O, copy=True)
    for i in _head_list(heads, h):
        out[i * d_v:(i + 1) * d_v] = 0
    return out


def without_each_head(concat, W_O, h, b_O=None):
    """The layer's output with each head removed in turn.

    Parameters
    ----------
    concat : array_like, shape (..., T, h*d_v)
        The heads' outputs side by side (``AttentionSteps.concat``).
    W_O : array_like, shape (h*d_v, d_out)
    h : int
    b_O : array_like, shape (d_out,), optional

    Returns
    -------
    ndarray, shape (h, ..., T, d_out)
        Entry ``i`` is ``concat @ W_O + b_O`` with head ``i``'s slice of ``concat`` set to zero.

    Examples
    --------
    >>> concat = np.array([[1.0, 2.0, 3.0, 4.0]])          # h = 2 heads of width 2
    >>> without_each_head(concat, np.eye(4), h=2)
    array([[[0., 0., 3., 4.]],
    <BLANKLINE>
           [[1., 2., 0., 0.]]])
    """
    concat = as_float_array(concat, "concat")
    W_O = as_float_array(W_O, "W_O")
    h = check_positive_int(h, "h")
    check_ndim(concat, "concat", 2, "(..., T, h*d_v)")
    check_ndim(W_O, "W_O", 2, "(h*d_v, d_out)", exact=True)
    if concat.shape[-1] != W_O.shape[0] or W_O.shape[0] % h:
        raise ValueError(f"concat {concat.shape} and W_O {W_O.shape} do not fit h={h} heads of equal width")
    d_v = W_O.shape[0] // h
    keep = np.repeat(1 - np.eye(h, dtype=concat.dtype), d_v, axis=1)  # (h, h*d_v): row i is 0 on head i
    lead = (h,) + (1,) * (concat.ndim - 1)
    out = (concat[None] * keep.reshape(*lead, -1)) @ W_O  # (h, ..., T, h*d_v) @ (h*d_v, d_out)
    return out if b_O is None else out + as_float_array(b_O, "b_O")


def value_norms(V_heads, W_O, h):
    r"""Length of what each key hands to the output, per unit of weight.

    For head ``i`` and key ``s`` this is :math:`\lVert v^{(i)}_s W^O_i \rVert`:
    the vector the head adds to a query's output, per unit of attention, when it
    looks at ``s`` (Kobayashi et al., 2020).

    Parameters
    ----------
    V_heads : array_like, shape (..., h, S, d_v)
    W_O : array_like, shape (h*d_v, d_out)

    Returns
    -------
    ndarray, shape (..., h, S)
    """
    V_heads = as_float_array(V_heads, "V_heads")
    W_O = as_float_array(W_O, "W_O")
    check_ndim(V_heads, "V_heads", 3, "(..., h, S, d_v)")
    h = check_positive_int(h, "h")
    d_v = V_heads.shape[-1]
    if V_heads.shape[-3] != h or W_O.ndim != 2 or W_O.shape[0] != h * d_v:
        raise ValueError(f"V_heads {V_heads.shape} and W_O {W_O.shape} do not fit h={h} heads of width {d_v}")
    W_per_head = W_O.reshape(h, d_v, -1)  # (h*d_v, d_out) -> (h, d_v, d_out)
    return np.linalg.norm(V_heads @ W_per_head, axis=-1)  # (..., h, S, d_out) -> (..., h, S)


def weighted_value_norms(A, V_heads, W_O, h):
    r""":math:`\lVert a_{t,s}\, v^{(i)}_s W^O_i \rVert`: how much key ``s`` really moves query ``t``.

    Returns an array shaped like ``A``, (..., h, T, S).
    """
    A = as_float_array(A, "A")
    norms = value_norms(V_heads, W_O, h)  # (..., h, S)
    return A * norms[..., None, :]  # (..., h, T, S) * (..., h, 1, S)


def cosine_drift(E, E_ref):
    r"""``1 - cos`` between matching rows: how far each embedding moved.

    Parameters
    ----------
    E : array_like, shape (..., B, d)
    E_ref : array_like, shape (B, d)

    Returns
    -------
    ndarray, shape (..., B)

    >>> cosine_drift(np.array([[1.0, 0.0], [0.0, 2.0]]), np.array([[1.0, 0.0], [1.0, 0.0]]))
    array([0., 1.])
    """
    E = as_float_array(E, "E")
    E_ref = as_float_array(E_ref, "E_ref")
    if E.shape[-2:] != E_ref.shape:
        raise ValueError(f"E has shape {E.shape}; its last two axes must match E_ref {E_ref.shape}")
    cos = (E * E_ref).sum(-1) / (np.linalg.norm(E, axis=-1) * np.linalg.norm(E_ref, axis=-1))
    return 1 - cos


def paraphrase_margins(E, n_items):
    r"""For each item: :math:`\cos(a, p) - \cos(a, x)`, the paraphrase's lead over the distractor.

    ``E`` holds unit-length embeddings of ``3 * n_items`` sentences in the order
    anchor, paraphrase, distractor, anchor, ... A positive margin means the
    model picks the true paraphrase.

    Parameters
    ----------
    E : array_like, shape (..., 3*n_items, d)

    Returns
    -------
    ndarray, shape (..., n_items)

    >>> E = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
    >>> paraphrase_margins(E, 1)
    array([0.8])
    """
    E = as_float_array(E, "E")
    n_items = check_positive_int(n_items, "n_items")
    if E.ndim < 2 or E.shape[-2] != 3 * n_items:
        raise ValueError(f"E must have 3*n_items = {3 * n_items} rows on axis -2, got shape {E.shape}")
    triples = E.reshape(*E.shape[:-2], n_items, 3, E.shape[-1])  # (..., n, 3, d)
    a, p, x = triples[..., 0, :], triples[..., 1, :], triples[..., 2, :]
    return (a * p).sum(-1) - (a * x).sum(-1)


@dataclass(frozen=True)
class AblationSummary:
    """The shape of an ablation sweep's damage (positive = worse without the head).

    Attributes
    ----------
    median : float
    top : list of ((layer, head), float)
        The most damaging removals, largest first.
    helpful : list of ((layer, head), float)
        Removals that improve the score (negative damage), best first.
    share_small : float
        Fraction of heads whose damage is below ``small``.
    """

    median: float
    top: list
    helpful: list
    share_small: float


def ablation_summary(damage, *, n_top=5, small=0.0):
    """Summarise a damage array of shape (L, h).

    Examples
    --------
    >>> s = ablation_summary(np.array([[0.5, -0.1], [0.0, 2.0]]), n_top=1, small=0.1)
    >>> s.median, s.top, s.helpful, s.share_small
    (0.25, [((1, 1), 2.0)], [((0, 1), -0.1)], 0.5)
    """
    damage = as_float_array(damage, "damage")
    check_ndim(damage, "damage", 2, "(L, h)", exact=True)

    def pairs(order):
        return [(tuple(int(i) for i in np.unravel_index(k, damage.shape)), float(damage.flat[k])) for k in order]

    order = np.argsort(-damage, axis=None, kind="stable")
    helpful = [k for k in np.argsort(damage, axis=None, kind="stable") if damage.flat[k] < 0]
    return AblationSummary(median=float(np.median(damage)), top=pairs(order[:n_top]), helpful=pairs(helpful),
                           share_small=float((damage < small).mean()))
