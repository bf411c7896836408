r"""What trained heads do: measures of specialisation, and switching heads off.

Pure analysis on arrays; nothing here knows about a particular model.

*Specialisation.* For one head with weights :math:`a_{t,s}` (query ``t``,
key ``s``) over ``T`` positions:

* previous-token mass :math:`\frac{1}{T-1}\sum_{t=1}^{T-1} a_{t,t-1}`,
* next-token mass :math:`\frac{1}{T-1}\sum_{t=0}^{T-2} a_{t,t+1}`,
* mass on a position :math:`p` (such as ``[CLS]`` at 0 or ``[SEP]`` at ``T-1``):
  :math:`\frac{1}{T}\sum_{t} a_{t,p}`,
* entropy :func:`mha.stats.head_entropy`,
* induction score on a text that repeats with period :math:`p`:
  :math:`\frac{1}{T-p}\sum_{t=p}^{T-1} a_{t,t-p+1}` (:func:`induction_scores`).

*Ablation.* The layer's output is :math:`\operatorname{Concat}(Z_1,\dots,Z_h)\,W^O
= \sum_i Z_i W^O_i`, where :math:`W^O_i` are the ``d_v`` rows of :math:`W^O` that
meet head ``i``. Zeroing head ``i``'s slice of the concatenation before
:math:`W^O` removes exactly the term :math:`Z_i W^O_i`; zeroing the rows
:math:`W^O_i` does the same. Mean ablation replaces :math:`Z_i` by its mean over
positions instead, keeping the constant part of what the head writes
(:func:`ablate_heads` with ``method="mean"``).

Shape legend as in :mod:`mha.attention`; ``L`` layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import (as_float_array, check_choice, check_count, check_index, check_layer, check_ndim,
                        check_number, check_positive_int, check_prob_rows, check_size, require_finite)
from .stats import head_entropy

__all__ = [
    "diagonal_mass", "previous_token_mass", "next_token_mass", "position_mass", "HeadProfile",
    "profile_heads", "heads_where", "check_layer", "group_by_layer", "remove_heads", "without_each_head", "value_norms",
    "weighted_value_norms", "cosine_drift", "paraphrase_margins", "ablation_summary", "AblationSummary",
    "top_key_share", "induction_scores", "ABLATIONS", "check_method", "ablate_heads",
    "same_token_mass", "offset_and_variation",
]

#: The two ways to take a head away: ``"zero"`` sets its output to 0; ``"mean"`` replaces it by its
#: mean over the positions of the text, so only what varies from token to token is removed.
ABLATIONS = ("zero", "mean")


def check_method(method):
    """``method`` if it is one of :data:`ABLATIONS`, else a ``ValueError`` that lists them."""
    return check_choice(method, "method", ABLATIONS)


def _self_attention(A, name="A"):
    """``A`` as self-attention weights (..., T, T): square, every row a probability distribution."""
    A = as_float_array(A, name)
    check_ndim(A, name, 2, "(..., T, T)")
    if A.shape[-1] != A.shape[-2]:
        raise ValueError(f"{name} must be self-attention weights (..., T, T), got shape {A.shape}")
    return check_prob_rows(A, name, ndim=2, legend="(..., T, T)")


def _index(value, name, n, where=""):
    """``value`` as an int from 0 to ``n - 1``; out of range reads "head 12 ... is out of range 0..11"."""
    try:
        return check_index(value, name, n)
    except TypeError as err:
        raise TypeError(f"{err} ({where.strip()})" if where else str(err)) from None
    except ValueError:
        raise ValueError(f"{name} {value}{where} is out of range 0..{n - 1}") from None


def _offset(offset, T):
    """``offset`` as a non-zero int with ``|offset| < T``, or a clear error."""
    offset = check_count(offset, "offset", low=1 - T)
    if offset == 0 or offset >= T:
        raise ValueError(f"offset must be a non-zero integer with |offset| < T={T}, got {offset}")
    return offset


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
    A = _self_attention(A)
    T = A.shape[-1]
    offset = _offset(offset, T)
    return np.diagonal(A, offset=offset, axis1=-2, axis2=-1).mean(axis=-1)  # (..., T-|o|) -> (...)


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
    A = _self_attention(A)
    T = A.shape[-1]
    position = check_count(position, "position", low=-T)
    if position >= T:
        raise ValueError(f"position={position} is out of range for T={T}: it must be from {-T} to {T - 1}")
    return A[..., :, position].mean(axis=-1)  # (..., T) -> (...)



def _concat_heads(concat, W_O, h):
    """Check a concatenation of head outputs against ``W_O`` and ``h``: (concat, W_O, h, d_v)."""
    concat = as_float_array(concat, "concat")
    check_ndim(concat, "concat", 2, "(..., T, h*d_v)")
    W_O = as_float_array(W_O, "W_O")
    h = check_positive_int(h, "h")
    d_v = _head_width(W_O, h)
    if concat.shape[-1] != W_O.shape[0]:
        raise ValueError(f"concat {concat.shape} needs as many columns as W_O {W_O.shape} has rows (h*d_v)")
    return concat, W_O, h, d_v

def same_token_mass(A, ids):
    """Mean weight that a repeated token puts on its other copies: (..., T, T) -> (...).

    Only the queries whose token occurs at another position of ``ids`` are
    averaged; for each, the weights on every other position with the same
    token id are added. Under a causal mask the later copies get no weight,
    so only the earlier ones count.

    Examples
    --------
    >>> A = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.6, 0.3, 0.1]])
    >>> float(same_token_mass(A, [7, 9, 7]))      # rows 0 and 2: 0.0 and 0.6 on the other 7
    0.3
    """
    A = _self_attention(A)
    T = A.shape[-1]
    try:
        ids = np.asarray(ids)
    except (ValueError, TypeError) as err:
        raise ValueError(f"ids could not be read as {T} integer token ids ({err})") from None
    if ids.shape != (T,) or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must hold {T} integer token ids, one per position of A {A.shape}, "
                         f"got shape {ids.shape} and type {ids.dtype}")
    same = (ids[:, None] == ids[None, :]) & ~np.eye(T, dtype=bool)  # (T, T): another copy of the query's token
    repeated = same.any(axis=1)  # (T,)
    if not repeated.any():
        raise ValueError("no token occurs twice in ids: there is no other copy to measure")
    return (A * same).sum(axis=-1)[..., repeated].mean(axis=-1)  # (..., T) -> (..., n_repeated) -> (...)


def offset_and_variation(concat, W_O, h):
    r"""What each head writes, split into a constant part and a part that varies: two arrays (..., h).

    Head ``i`` writes :math:`Z_{i,t} W^O_i` at position ``t``. Its *offset* is the
    length of the mean over the positions, :math:`\lVert \bar Z_i W^O_i \rVert`;
    its *variation* is the root-mean-square length of what is left,
    :math:`\sqrt{\frac1T \sum_t \lVert (Z_{i,t} - \bar Z_i) W^O_i \rVert^2}`.
    Zero ablation removes both; mean ablation removes only the variation.

    Parameters
    ----------
    concat : array_like, shape (..., T, h*d_v)
    W_O : array_like, shape (h*d_v, d_out)
    h : int

    Examples
    --------
    >>> concat = np.array([[1.0, 2.0], [3.0, 2.0]])      # T = 2, h = 2 heads of width 1
    >>> offset, variation = offset_and_variation(concat, np.eye(2), h=2)
    >>> offset.tolist(), variation.tolist()              # head 1 never changes: all offset
    ([2.0, 2.0], [1.0, 0.0])
    """
    concat, W_O, h, d_v = _concat_heads(concat, W_O, h)
    Z = concat.reshape(*concat.shape[:-1], h, d_v)  # (..., T, h*d_v) -> (..., T, h, d_v)
    W = W_O.reshape(h, d_v, W_O.shape[1])  # (h*d_v, d_out) -> (h, d_v, d_out)
    mean = Z.mean(axis=-3)  # (..., h, d_v)
    offset = np.linalg.norm(np.einsum("...iv,ivo->...io", mean, W), axis=-1)  # (..., h, d_out) -> (..., h)
    rest = np.einsum("...tiv,ivo->...tio", Z - mean[..., None, :, :], W)  # (..., T, h, d_out)
    variation = np.sqrt((rest ** 2).sum(axis=-1).mean(axis=-2))  # (..., T, h) -> (..., h)
    require_finite(("the offsets", offset), ("the variations", variation))
    return offset, variation


def top_key_share(A, offset):
    """Share of the queries whose largest weight sits on the key ``offset`` places away: (..., T, T) -> (...).

    Voita et al. (2019) call a head *positional* when this share is at least
    0.9 for ``offset = -1`` or ``+1``. Only the :math:`T - |\\text{offset}|`
    queries that have such a key count; a tie goes to the first key.

    >>> A = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.8, 0.2]])
    >>> float(top_key_share(A, -1))           # rows 1 and 2: the top key is row 1's key 0 and row 2's key 1
    1.0
    """
    A = _self_attention(A)
    T = A.shape[-1]
    offset = _offset(offset, T)
    top = A.argmax(axis=-1)  # (..., T): the key with the most weight, for each query
    t = np.arange(T)
    rows = (t + offset >= 0) & (t + offset < T)  # queries that have a key `offset` away
    return (top[..., rows] == (t + offset)[rows]).mean(axis=-1)  # (..., T-|o|) -> (...)


def induction_scores(A, period):
    r"""How much each head looks at the token after the current token's earlier copy: -> (L, h).

    ``A`` holds the attention weights of a text whose tokens repeat with period
    ``p``: token ``t`` equals token ``t - p`` for every ``t >= p``. Query ``t`` of
    the repeat finds its earlier copy at ``t - p``; the token that came next
    then sits at ``t - p + 1``. An induction head looks there. Its score is the
    mean weight there over the :math:`T - p` queries of the repeat,

    .. math:: \operatorname{score} = \frac{1}{T - p} \sum_{t=p}^{T-1} a_{t,\,t-p+1},

    averaged over every leading (batch) axis too. A head that spreads its
    weight evenly over the keys a causal mask allows scores
    :math:`\frac{1}{T-p}\sum_{t=p}^{T-1} \frac{1}{t+1}`.

    Parameters
    ----------
    A : array_like, shape (..., L, h, T, T)
        Attention weights: ``L`` layers of ``h`` heads; every row sums to 1.
    period : int
        ``p``, the length of the part that repeats, from 1 to ``T - 1``.

    Returns
    -------
    ndarray, shape (L, h)

    Examples
    --------
    >>> A = np.zeros((1, 1, 4, 4))
    >>> A[0, 0, :, 0] = 1.0                      # every query looks at the first token ...
    >>> A[0, 0, 3] = [0.0, 0.5, 0.5, 0.0]        # ... but the last one, half on the token after its copy
    >>> induction_scores(A, period=2)            # queries 2 and 3 score 0.0 and 0.5
    array([[0.25]])
    """
    A = _self_attention(A)
    check_ndim(A, "A", 4, "(..., L, h, T, T)")
    if A.size == 0:
        raise ValueError(f"A is empty (shape {A.shape}); it needs at least one layer, head and text")
    T = A.shape[-1]
    period = check_positive_int(period, "period")
    if period >= T:
        raise ValueError(f"period={period} leaves no repeat in A of shape {A.shape}: it must be from 1 "
                         f"to T - 1 = {T - 1}")
    t = np.arange(period, T)  # the queries of the repeat
    on_next = A[..., t, t - period + 1]  # (..., L, h, T, T) -> (..., L, h, T-p)
    per_head = on_next.mean(axis=-1)  # (..., L, h)
    return per_head.reshape(-1, *A.shape[-4:-2]).mean(axis=0)  # (B, L, h) -> (L, h)


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
    A = _self_attention(A)
    check_ndim(A, "A", 4, "(L, h, T, T)", exact=True)
    if A.shape[-1] < 2:
        raise ValueError(f"A needs at least 2 positions to measure neighbours, got shape {A.shape}")
    return HeadProfile(previous=previous_token_mass(A), next=next_token_mass(A),
                       first=position_mass(A, 0), last=position_mass(A, -1), entropy=head_entropy(A))


def heads_where(values, threshold):
    """The ``(layer, head)`` pairs whose value exceeds ``threshold`` (a finite number), largest first.

    >>> heads_where(np.array([[0.1, 0.9], [0.7, 0.2]]), 0.5)
    [(0, 1), (1, 0)]
    """
    values = as_float_array(values, "values")
    check_ndim(values, "values", 2, "(L, h)", exact=True)
    threshold = check_number(threshold, "threshold")
    order = np.argsort(-values, axis=None, kind="stable")
    return [tuple(int(i) for i in np.unravel_index(k, values.shape)) for k in order
            if values.flat[k] > threshold]


def group_by_layer(pairs, L, h):
    """Sort ``(layer, head)`` pairs into one list of heads per layer.

    ``L`` lists are made, so ``L`` may not exceed :data:`MAX_LAYERS`.

    >>> group_by_layer([(0, 2), (1, 0), (0, 1)], L=2, h=3)
    [[2, 1], [0]]
    """
    L, h = check_size(L, "L", high=MAX_LAYERS), check_positive_int(h, "h")
    out = [[] for _ in range(L)]
    for pair in _as_list(pairs, "pairs", "an iterable of (layer, head) pairs"):
        try:
            layer, head = pair
        except (TypeError, ValueError):
            raise TypeError(f"expected (layer, head) pairs, got {pair!r}") from None
        head = _index(head, "head", h, f" in the pair {pair!r}")
        out[check_layer(layer, L)].append(head)
    return out


#: The most layers :func:`group_by_layer` makes lists for (real models have at most a few hundred).
MAX_LAYERS = 10_000


def _as_list(items, name, what):
    try:
        return list(items)
    except TypeError:
        raise TypeError(f"{name} must be {what}, got {items!r} of type {type(items).__name__}") from None


def _head_list(heads, h):
    """``heads`` (one head index or an iterable of them) as a list of ints from 0 to ``h - 1``."""
    if isinstance(heads, (int, np.integer)):
        heads = [heads]
    return [_index(i, "head", h, " in heads") for i in _as_list(heads, "heads", "a head index or an iterable of them")]


def _head_width(W_O, h):
    """``d_v``: how many rows of ``W_O`` (h*d_v, d_out) meet one head, or a clear error."""
    check_ndim(W_O, "W_O", 2, "(h*d_v, d_out)", exact=True)
    if W_O.shape[0] % h:
        raise ValueError(f"W_O has {W_O.shape[0]} rows (shape {W_O.shape}), not divisible by h={h}")
    if W_O.shape[0] == 0:
        raise ValueError(f"W_O has no rows (shape {W_O.shape}); each of the h={h} heads needs d_v >= 1 rows")
    return W_O.shape[0] // h


def _bias(b_O, d_out):
    """``b_O`` as an array of shape (d_out,), or None when there is no bias."""
    if b_O is None:
        return None
    b_O = as_float_array(b_O, "b_O")
    if b_O.shape != (d_out,):
        raise ValueError(f"b_O must have shape ({d_out},), one entry per output column of W_O, got {b_O.shape}")
    return b_O


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
    d_v = _head_width(W_O, check_positive_int(h, "h"))
    out = np.array(W_O, copy=True)
    for i in _head_list(heads, h):
        out[i * d_v:(i + 1) * d_v] = 0
    return out


def without_each_head(concat, W_O, h, b_O=None, *, method="zero"):
    r"""The layer's output with each head removed in turn.

    Parameters
    ----------
    concat : array_like, shape (..., T, h*d_v)
        The heads' outputs side by side (``AttentionSteps.concat``).
    W_O : array_like, shape (h*d_v, d_out)
    h : int
    b_O : array_like, shape (d_out,), optional
    method : {"zero", "mean"}
        ``"zero"`` sets head ``i``'s slice to 0. ``"mean"`` sets every row of it
        to its mean over the ``T`` positions, :math:`\bar Z_i = \frac1T \sum_t Z_{i,t}`.

    Returns
    -------
    ndarray, shape (h, ..., T, d_out)
        Entry ``i`` is ``concat @ W_O + b_O`` with head ``i``'s slice of ``concat`` replaced.

    Examples
    --------
    >>> concat = np.array([[1.0, 2.0, 3.0, 4.0]])          # h = 2 heads of width 2
    >>> without_each_head(concat, np.eye(4), h=2)
    array([[[0., 0., 3., 4.]],
    <BLANKLINE>
           [[1., 2., 0., 0.]]])
    """
    concat, W_O, h, d_v = _concat_heads(concat, W_O, h)
    b_O = _bias(b_O, W_O.shape[1])
    method = check_method(method)
    keep = np.repeat(1 - np.eye(h, dtype=concat.dtype), d_v, axis=1)  # (h, h*d_v): row i is 0 on head i
    keep = keep.reshape((h,) + (1,) * (concat.ndim - 1) + (h * d_v,))  # (h, 1, ..., 1, h*d_v)
    mixed = concat[None] * keep  # (h, ..., T, h*d_v): head i's slice zeroed in entry i
    if method == "mean":
        mixed = mixed + _position_mean(concat)[None] * (1 - keep)  # ... and filled with its mean
    out = mixed @ W_O  # (h, ..., T, h*d_v) @ (h*d_v, d_out)
    out = out if b_O is None else out + b_O
    require_finite(("the layer's output without each head", out))
    return out


def _position_mean(concat):
    """Each column's mean over the positions (axis -2), kept as an axis of length 1: (..., T, n) -> (..., 1, n)."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = concat.mean(axis=-2, keepdims=True)  # (..., T, n) -> (..., 1, n)
    if not np.isfinite(mean).all():  # the sum of huge finite entries overflowed: scale by a power of 2 (exact)
        shift = int(np.frexp(float(np.abs(concat).max()))[1])
        mean = np.ldexp(np.ldexp(concat, -shift).mean(axis=-2, keepdims=True), shift).astype(concat.dtype)
    return mean


def ablate_heads(concat, heads, h, method="zero"):
    r"""``concat`` with the slices of the given heads replaced: by 0, or by their mean over positions.

    Mean ablation keeps what a head adds on average (a near-constant offset,
    which zeroing would also delete) and removes only what changes from one
    token to the next.

    Parameters
    ----------
    concat : array_like, shape (..., T, h*d_v)
    heads : int or iterable of int
    h : int
    method : {"zero", "mean"}

    Returns
    -------
    ndarray, shape (..., T, h*d_v)

    Examples
    --------
    >>> concat = np.array([[1.0, 5.0], [3.0, 7.0]])          # T = 2 positions, h = 2 heads of width 1
    >>> ablate_heads(concat, [1], h=2, method="mean")
    array([[1., 6.],
           [3., 6.]])
    """
    concat = as_float_array(concat, "concat")
    check_ndim(concat, "concat", 2, "(..., T, h*d_v)")
    h = check_positive_int(h, "h")
    if concat.shape[-1] % h or concat.shape[-1] == 0:
        raise ValueError(f"concat {concat.shape} must have h*d_v columns with d_v >= 1 for h={h} heads")
    d_v = concat.shape[-1] // h
    method = check_method(method)
    out = np.array(concat, copy=True)
    mean = _position_mean(concat)  # (..., 1, h*d_v)
    for i in _head_list(heads, h):
        cols = slice(i * d_v, (i + 1) * d_v)
        out[..., cols] = 0 if method == "zero" else mean[..., cols]
    return out


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
    check_ndim(V_heads, "V_heads", 3, "(..., h, S, d_v)")
    W_O = as_float_array(W_O, "W_O")
    h = check_positive_int(h, "h")
    d_v = _head_width(W_O, h)
    if V_heads.shape[-3] != h or V_heads.shape[-1] != d_v:
        raise ValueError(f"V_heads {V_heads.shape} and W_O {W_O.shape} do not fit h={h} heads of width {d_v}")
    W_per_head = W_O.reshape(h, d_v, W_O.shape[1])  # (h*d_v, d_out) -> (h, d_v, d_out)
    norms = np.linalg.norm(V_heads @ W_per_head, axis=-1)  # (..., h, S, d_out) -> (..., h, S)
    require_finite(("the value norms", norms))
    return norms


def weighted_value_norms(A, V_heads, W_O, h):
    r""":math:`\lVert a_{t,s}\, v^{(i)}_s W^O_i \rVert`: how much key ``s`` really moves query ``t``.

    ``A`` holds the attention weights (..., h, T, S) (rows of probabilities),
    the other arguments are as in :func:`value_norms`. Returns an array of
    shape (..., h, T, S), the leading axes of ``A`` and ``V_heads`` broadcast.
    """
    A = check_prob_rows(A, "A", ndim=3, legend="(..., h, T, S)")
    norms = value_norms(V_heads, W_O, h)  # (..., h, S)
    try:
        np.broadcast_shapes(A.shape, norms[..., None, :].shape)
        fits = A.shape[-3] == norms.shape[-2] and A.shape[-1] == norms.shape[-1]
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"A {A.shape} must be (..., h, T, S) with the h={h} heads and S keys of "
                         f"V_heads {np.shape(V_heads)}")
    return A * norms[..., None, :]  # (..., h, T, S) * (..., h, 1, S)


def _unit_rows(E, name):
    """Each row of ``E`` (its last axis) scaled to length 1; a zero row has no direction."""
    if E.shape[-1] == 0:
        raise ValueError(f"{name} has rows of length d = 0 (shape {E.shape}); a direction needs d >= 1")
    scale = np.abs(E).max(axis=-1, keepdims=True)  # dividing by it first: the squares cannot overflow
    if (scale == 0).any():
        where = tuple(int(i) for i in np.argwhere(scale[..., 0] == 0)[0])
        raise ValueError(f"{name} (shape {E.shape}) holds a zero vector at index {where}; it has no "
                         "direction, so its cosine with another vector is undefined")
    U = E / scale
    return U / np.linalg.norm(U, axis=-1, keepdims=True)


def cosine_drift(E, E_ref):
    r"""``1 - cos`` between matching rows: how far each embedding moved.

    The result lies in ``[0, 2]``. A zero vector has no direction and is refused.

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
    check_ndim(E_ref, "E_ref", 2, "(B, d)", exact=True)
    if E.shape[-2:] != E_ref.shape:
        raise ValueError(f"E has shape {E.shape}; its last two axes must match E_ref {E_ref.shape}")
    cos = (_unit_rows(E, "E") * _unit_rows(E_ref, "E_ref")).sum(-1)  # (..., B, d) -> (..., B)
    return 1 - np.clip(cos, -1, 1)  # rounding can push |cos| a little past 1


def paraphrase_margins(E, n_items):
    r"""For each item: :math:`\cos(a, p) - \cos(a, x)`, the paraphrase's lead over the distractor.

    ``E`` holds the embeddings of ``3 * n_items`` sentences in the order
    anchor, paraphrase, distractor, anchor, ... Each row is scaled to length 1
    first (a zero row is refused), so the products are cosines and every
    margin lies in ``[-2, 2]``. A positive margin means the model picks the
    true paraphrase.

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
    U = _unit_rows(E, "E")
    triples = U.reshape(*U.shape[:-2], n_items, 3, U.shape[-1])  # (..., 3n, d) -> (..., n, 3, d)
    a, p, x = triples[..., 0, :], triples[..., 1, :], triples[..., 2, :]
    return (a * p).sum(-1) - (a * x).sum(-1)


@dataclass(frozen=True)
class AblationSummary:
    """The shape of an ablation sweep's damage (positive = worse without the head).

    Attributes
    ----------
    median : float
        Middle value of the damage (the mean of the two middle values when
        the number of heads is even).
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
    """Summarise a damage array of shape (L, h), with at least one head.

    ``n_top`` (an integer, at least 0) is how many removals ``top`` lists;
    ``small`` (a finite number) is the threshold for ``share_small``.

    Examples
    --------
    >>> s = ablation_summary(np.array([[0.5, -0.1], [0.0, 2.0]]), n_top=1, small=0.1)
    >>> s.median, s.top, s.helpful, s.share_small
    (0.25, [((1, 1), 2.0)], [((0, 1), -0.1)], 0.5)
    """
    damage = as_float_array(damage, "damage")
    check_ndim(damage, "damage", 2, "(L, h)", exact=True)
    if damage.size == 0:
        raise ValueError(f"damage is empty (shape {damage.shape}); a summary needs at least one head")
    n_top = check_count(n_top, "n_top")
    small = check_number(small, "small")
    ordered = np.sort(damage, axis=None)
    median = ordered[(ordered.size - 1) // 2] / 2 + ordered[ordered.size // 2] / 2  # halves first: no overflow

    def pairs(order):
        return [(tuple(int(i) for i in np.unravel_index(k, damage.shape)), float(damage.flat[k])) for k in order]

    order = np.argsort(-damage, axis=None, kind="stable")
    helpful = [k for k in np.argsort(damage, axis=None, kind="stable") if damage.flat[k] < 0]
    return AblationSummary(median=float(median), top=pairs(order[:n_top]), helpful=pairs(helpful),
                           share_small=float((damage < small).mean()))
