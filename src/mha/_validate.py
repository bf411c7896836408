"""Input checks shared by the library: the one place where inputs are validated.

Every public function turns its inputs into arrays and numbers here, so that
bad input fails early with a message that names the argument, its shape and
what was expected, instead of an error from deep inside NumPy or a silent NaN.

What is here, by kind of input:

* arrays: :func:`as_float_array`, :func:`as_bool_mask`, :func:`check_ndim`,
  :func:`check_prob_rows` (rows of probabilities, one tolerance :data:`ROW_SUM_TOL`),
  :func:`check_qkv` (one attention head's queries, keys and values);
* whole numbers: :func:`check_positive_int`, :func:`check_count`, :func:`check_index`,
  :func:`check_layer`, :func:`check_size` (a count too large to loop over);
* things an array is updated in or drawn from: :func:`check_generator`, :func:`check_out_array`
  (a writable float array of a given shape), :func:`check_labels` (one text per row or column);
* other scalars: :func:`check_flag` (real booleans only), :func:`check_number`, :func:`check_choice`,
  :func:`check_axis`;
* finite inputs too large to compute with: :func:`score_dtype` (the float type attention
  scores fit in), :func:`loop_dtype` (the float type every number of the head-by-head layer
  fits in), :func:`require_finite` (a clear error instead of a silent infinity or NaN).
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import numpy as np

#: How far a row of probabilities may stray from summing to 1 before it is refused.
#: Loose enough for float32 attention weights of a few thousand keys.
ROW_SUM_TOL = 1e-5


def _type_name(value) -> str:
    return type(value).__name__


def _refuse_masked(x, name: str) -> None:
    if np.ma.isMaskedArray(x):
        raise TypeError(
            f"{name} is a NumPy masked array (shape {np.shape(x)}); its mask would be lost here. "
            "Pass a plain array, and for attention pass the mask separately (mask=...)"
        )


def as_float_array(x, name: str, *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a clear error.

    Integers become float64; float16, float32 and float64 keep their precision.

    Raises
    ------
    TypeError
        If ``x`` is not numeric (strings, objects, booleans, complex numbers),
        or is a masked array.
    ValueError
        If ``x`` is ragged, or holds NaN or infinity (``-inf`` is allowed
        when ``allow_neg_inf`` is true).
    """
    if x is None:
        raise TypeError(f"{name} must be an array of numbers, got None")
    _refuse_masked(x, name)
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name} could not be read as a rectangular array of numbers ({err})") from None
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind != "f" or arr.dtype.itemsize > 8:
        raise TypeError(
            f"{name} must hold real numbers (float16, float32, float64 or integers), got an array of "
            f"dtype {arr.dtype} with shape {arr.shape}"
        )
    with np.errstate(over="ignore", invalid="ignore"):
        total = np.add.reduce(arr, axis=None)  # NaN and inf survive a sum; a finite sum means every entry is finite
    if np.isfinite(total):  # the common case: one pass, no temporary array
        return arr
    bad = np.isnan(arr) | np.isposinf(arr) | (np.isneginf(arr) & (not allow_neg_inf))
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{name} (shape {arr.shape}) holds {arr[where]} at index {where}; "
            "every entry must be a finite number"
        )
    return arr


def as_bool_mask(mask, name: str = "mask") -> np.ndarray:
    """Return ``mask`` as a boolean array (True = may attend)."""
    _refuse_masked(mask, name)
    try:
        arr = np.asarray(mask)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name} could not be read as a rectangular array of booleans ({err})") from None
    if arr.dtype != np.bool_:
        raise TypeError(
            f"{name} must be a boolean array (True where a query may attend), "
            f"got dtype {arr.dtype} with shape {arr.shape}"
        )
    return arr


def check_ndim(arr: np.ndarray, name: str, ndim: int, legend: str, *, exact: bool = False) -> None:
    """Raise if ``arr`` has fewer (or, with ``exact``, other) than ``ndim`` axes."""
    if arr.ndim < ndim or (exact and arr.ndim != ndim):
        need = f"exactly {ndim}" if exact else f"at least {ndim}"
        raise ValueError(f"{name} must have {need} axes {legend}, got shape {arr.shape}")


def check_prob_rows(A, name: str, *, ndim: int = 1, legend: str = "(..., S)",
                    positive: bool = False) -> np.ndarray:
    """``A`` as a float array whose last axis holds probability distributions.

    Every entry must be at least 0 (with ``positive``, above 0) and every row
    must sum to 1 within :data:`ROW_SUM_TOL`; a row needs at least one entry.
    """
    A = as_float_array(A, name)
    check_ndim(A, name, ndim, legend)
    if A.shape[-1] == 0:
        raise ValueError(f"{name} has an empty last axis (shape {A.shape}); a row needs at least one weight")
    bad = A <= 0 if positive else A < 0
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        need = ("every weight must be above 0 (a zero weight needs a score of -inf, which no finite "
                "head gives)") if positive else "probabilities are never negative"
        raise ValueError(f"{name} (shape {A.shape}) holds {A[where]:.3g} at index {where}; {need}")
    with np.errstate(over="ignore", invalid="ignore"):  # a sum that overflows is not 1 either
        sums = A.sum(axis=-1)
        off = ~(np.abs(sums - 1.0) <= ROW_SUM_TOL)
    if off.any():
        where = tuple(int(i) for i in np.argwhere(off)[0])
        raise ValueError(f"the rows of {name} (shape {A.shape}) must each sum to 1, but the row at index "
                         f"{where} sums to {sums[where]:.6g}")
    return A


def check_qkv(Q, K, V, *, grouped=False):
    """Validate attention's ``Q``, ``K``, ``V``; return them as arrays and their batch shape.

    ``Q`` is ``(..., T, d_k)``, ``K`` is ``(..., S, d_k)``, ``V`` is ``(..., S, d_v)``;
    the leading axes broadcast. ``S`` and ``d_k`` must be at least 1. With
    ``grouped``, axis -3 holds heads: ``h`` query heads in ``Q`` and ``g`` shared
    key/value heads in ``K`` and ``V``, with ``g`` dividing ``h``; the batch shape
    returned then leaves the head axis out.
    """
    Q = as_float_array(Q, "Q")
    K = as_float_array(K, "K")
    V = as_float_array(V, "V")
    axes, extra = (3, "h, ") if grouped else (2, "")
    check_ndim(Q, "Q", axes, f"(..., {extra}T, d_k)")
    check_ndim(K, "K", axes, f"(..., {extra.replace('h', 'g')}S, d_k)")
    check_ndim(V, "V", axes, f"(..., {extra.replace('h', 'g')}S, d_v)")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"Q and K must have the same width d_k, got Q {Q.shape} and K {K.shape}")
    if Q.shape[-1] == 0:
        raise ValueError(f"Q and K have width d_k = 0 (Q {Q.shape}, K {K.shape}); a head needs d_k >= 1")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K and V must have the same length S, got K {K.shape} and V {V.shape}")
    if K.shape[-2] == 0:
        raise ValueError(f"K and V have no positions (S = 0; K {K.shape}); a query needs at least one key")
    if grouped and (K.shape[-3] != V.shape[-3] or Q.shape[-3] % K.shape[-3]):
        raise ValueError(f"K and V need the same number of heads g, and g must divide the h heads of Q; "
                         f"got Q {Q.shape}, K {K.shape}, V {V.shape}")
    try:
        lead = np.broadcast_shapes(Q.shape[:-axes], K.shape[:-axes], V.shape[:-axes])
    except ValueError:
        raise ValueError(
            f"the leading (batch) axes of Q {Q.shape}, K {K.shape} and V {V.shape} do not broadcast"
        ) from None
    return Q, K, V, lead


def _whole(value, name: str, what: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be {what}, got {value!r} of type {_type_name(value)}")
    return int(value)


def check_positive_int(value, name: str) -> int:
    """Return ``value`` as an ``int`` if it is a whole number of at least 1."""
    value = _whole(value, name, "a positive integer")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return value


def check_count(value, name: str, *, low: int = 0) -> int:
    """Return ``value`` as an ``int`` if it is a whole number of at least ``low`` (a seed, a count)."""
    value = _whole(value, name, f"an integer of at least {low}")
    if value < low:
        raise ValueError(f"{name} must be an integer of at least {low}, got {value}")
    return value


def check_index(value, name: str, n: int) -> int:
    """Return ``value`` as an ``int`` if it indexes one of ``n`` things (``0 <= value < n``)."""
    value = _whole(value, name, f"an integer index from 0 to {n - 1}")
    if not 0 <= value < n:
        raise ValueError(f"{name}={value} is out of range: it must be from 0 to {n - 1}")
    return value


def check_size(value, name: str, *, low: int = 1, high: int = 2 ** 40) -> int:
    """Return ``value`` as an ``int`` from ``low`` to ``high``: a count that sets how much work a call does.

    A count beyond ``high`` is refused with a clear message instead of a
    loop that never ends or an allocation NumPy cannot make.
    """
    what = "a positive integer" if low == 1 else f"an integer of at least {low}"
    value = _whole(value, name, what)
    if value < low:
        raise ValueError(f"{name} must be {what}, got {value}")
    if value > high:
        shown = f"{value:.3g}" if value < 10 ** 300 else f"an integer of {len(str(value))} digits"
        raise ValueError(f"{name}={shown} is too large: at most {high:,} is supported")
    return value


def is_sequence(value) -> bool:
    """True for a list, tuple, array or other iterable of items; False for text, dicts, sets, types and scalars."""
    return (not isinstance(value, (str, bytes, dict, set, frozenset, type)) and hasattr(value, "__iter__")
            and not (isinstance(value, np.ndarray) and value.ndim == 0))


def check_generator(rng, name: str = "rng") -> np.random.Generator:
    """Return ``rng`` if it is a ``numpy.random.Generator`` (``np.random.default_rng(seed)``), else ``TypeError``."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator (for example np.random.default_rng(0)), "
                        f"got {rng!r:.60} of type {_type_name(rng)}")
    return rng


def check_out_array(x, name: str, shape=None, *, dtype=None) -> np.ndarray:
    """Return ``x`` if it is a writable float ``ndarray`` (of ``shape`` and ``dtype`` when given): updated in place.

    Lists and read-only arrays are refused (an update in place would be lost),
    and so are NaN and infinity.
    """
    if not isinstance(x, np.ndarray) or np.ma.isMaskedArray(x):
        raise TypeError(f"{name} must be a NumPy array of floats, updated in place, got {_type_name(x)}")
    if x.dtype.kind != "f":
        raise TypeError(f"{name} must hold floats (it is updated in place), got dtype {x.dtype} with shape {x.shape}")
    if not x.flags.writeable:
        raise ValueError(f"{name} (shape {x.shape}) is read-only; it is updated in place")
    if shape is not None and x.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {x.shape}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name} must have dtype {np.dtype(dtype)}, got {x.dtype} (shape {x.shape})")
    as_float_array(x, name)  # finite
    return x


def check_labels(labels, name: str, n: int | None = None, *, numbers_too: bool = False, chars_ok: bool = False) -> list:
    """Return ``labels`` as a list of ``str`` (one per row, column or stop), ``n`` of them when given.

    ``None``, a single string, a dict and other non-sequences are refused, and
    so are entries that are not text (with ``numbers_too``, numbers are
    accepted and written as text, e.g. layer numbers). With ``chars_ok``, one
    string is read as its characters (``"ab"``: two labels).
    """
    if chars_ok and isinstance(labels, str):
        labels = list(labels)
    if labels is None or not is_sequence(labels):
        raise TypeError(f"{name} must be a sequence of strings, got {labels!r:.60} of type {_type_name(labels)}")
    labels = list(labels)
    allowed = (str, numbers.Real, np.generic) if numbers_too else (str,)
    bad = [x for x in labels if not isinstance(x, allowed) or isinstance(x, (bool, np.bool_, bytes))]
    if bad:
        raise TypeError(f"{name} must hold {'strings or numbers' if numbers_too else 'strings'}, got "
                        f"{bad[0]!r:.40} of type {_type_name(bad[0])} among them")
    labels = [str(x) for x in labels]
    if n is not None and len(labels) != n:
        raise ValueError(f"{name} must have {n} entries (one per row, column or stop), got {len(labels)}")
    return labels


def check_layer(layer, L) -> int:
    """Return ``layer`` as an ``int`` if it indexes one of ``L`` layers ("layer 5 is out of range 0..2" if not)."""
    L = check_positive_int(L, "L")
    try:
        return check_index(layer, "layer", L)
    except ValueError:
        raise ValueError(f"layer {layer} is out of range 0..{L - 1}") from None


def check_choice(value, name: str, options) -> str:
    """Return ``value`` if it is one of the strings ``options``, else a ``ValueError`` that lists them."""
    if not isinstance(value, str) or value not in options:
        raise ValueError(f"{name} must be one of {tuple(options)}, got {value!r:.60}")
    return value


def check_counts(values, name: str, *, low: int = 0, distinct: bool = False) -> list:
    """Return ``values`` as a non-empty list of whole numbers of at least ``low`` (seeds, slider stops).

    With ``distinct``, repeated values are refused (each is one stop of a slider).
    """
    if not is_sequence(values):
        raise TypeError(f"{name} must be a sequence of integers of at least {low}, got {values!r:.60}")
    values = [check_count(v, f"{name} entry", low=low) for v in values]
    if not values:
        raise ValueError(f"{name} is empty: give at least one value")
    if distinct and len(set(values)) != len(values):
        raise ValueError(f"{name} must be distinct (each is one stop of the slider), got {values}")
    return values


def check_causal(causal, T: int, S: int) -> bool:
    """``causal`` as a real boolean; ``True`` needs as many queries ``T`` as keys ``S``."""
    causal = check_flag(causal, "causal")
    if causal and T != S:
        raise ValueError(f"causal=True needs as many queries as keys (self-attention), got T={T} and S={S}")
    return causal


def check_flag(value, name: str) -> bool:
    """Return ``value`` as a ``bool`` if it is ``True`` or ``False`` (NumPy's too), else ``TypeError``.

    Strings, numbers and arrays are refused: ``"False"`` is truthy in Python.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {value!r} of type {_type_name(value)}")
    return bool(value)


def check_number(value, name: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, finite: bool = True) -> float:
    """Return ``value`` as a ``float`` if it is a real number in range.

    NumPy scalars (``np.float32(0.1)``) are accepted; booleans, strings,
    arrays and complex numbers are not. NaN is always refused, infinity
    unless ``finite`` is false. ``low`` is inclusive unless ``low_open``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
            value = value.item()
        else:
            raise TypeError(f"{name} must be a real number, got {value!r} of type {_type_name(value)}")
    try:
        value = float(value)
    except OverflowError:  # a whole number too large for a float
        raise ValueError(f"{name} must be a finite number, got an integer with {len(str(value))} digits") from None
    if math.isnan(value) or (finite and math.isinf(value)):
        raise ValueError(f"{name} must be a finite number, got {value}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ValueError(f"{name} must be {'above' if low_open else 'at least'} {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be at most {high}, got {value}")
    return value


def check_axis(axis, ndim: int, name: str = "axis") -> int:
    """Return ``axis`` as a non-negative ``int`` for an array with ``ndim`` axes."""
    axis = _whole(axis, name, "an integer (one axis)")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for an array with {ndim} axes")
    return axis % ndim


def check_text(value, name: str = "text") -> str:
    """Return ``value`` if it is a ``str`` that UTF-8 can encode, else a clear error.

    A lone surrogate (``"\\ud800"``, half of a UTF-16 pair) is a valid Python
    ``str`` but not valid Unicode text; tokenizers that work on UTF-8 bytes
    cannot take it. The message gives its position.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {value!r:.60} of type {_type_name(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = value[err.start]
        raise ValueError(
            f"{name} holds a lone surrogate U+{ord(bad):04X} at position {err.start}, which is not valid "
            "Unicode text; remove it or decode the source bytes correctly"
        ) from None
    return value


def check_path(path, name: str = "path", *, file: bool = False):
    """``path`` if it is a ``str`` or ``os.PathLike`` (with ``file``, one that is not a directory), else a clear error."""
    import os  # only here: paths are rare among the library's inputs

    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a file path (str or pathlib.Path), got {path!r:.60} of type {_type_name(path)}")
    if file and os.path.isdir(path):
        raise ValueError(f"{name}={os.fspath(path)!r} is a directory; give the file itself")
    return path


def as_index_array(x, name: str, n: int, *, allow_empty: bool = False) -> np.ndarray:
    """Return ``x`` as an int64 array whose entries all index one of ``n`` things (token ids, rows).

    Booleans, floats (even whole ones) and ragged lists are refused; so are
    empty arrays unless ``allow_empty`` (then ``[]`` is fine too).
    """
    _refuse_masked(x, name)
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name} could not be read as a rectangular array of integers ({err})") from None
    if allow_empty and arr.size == 0 and arr.dtype.kind in "iuf":
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an array of integers, got dtype {arr.dtype} with shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}); it needs at least one entry")
    low, high = arr.min(), arr.max()
    if low < 0 or high >= n:
        bad = low if low < 0 else high
        where = tuple(int(i) for i in np.argwhere(arr == bad)[0])
        raise ValueError(f"{name} (shape {arr.shape}) holds {int(bad)} at index {where}; "
                         f"every entry must be from 0 to {n - 1}")
    return arr.astype(np.int64, copy=False)


# ---------------------------------------------------------------- numbers too large for their type
# A score may reach this fraction of its type's largest number: the softmax's shift by the row
# maximum can double it, and the matrix product's partial sums stay within the bound.
_HEADROOM = 0.25
# Below these bounds on |score|, exp(score) neither overflows (even summed over e^28 keys) nor
# falls below the smallest normal number, so the softmax needs no shift by the row maximum.
_NO_SHIFT = {np.dtype(np.float32): 60.0, np.dtype(np.float64): 500.0}


class ScoreType(NamedTuple):
    """What :func:`score_dtype` decides: where to compute, and how careful to be."""

    dtype: np.dtype  # the float type to compute in
    may_overflow: bool  # True: the scores might still overflow it (check the result)
    small: bool  # True: every |score| is small enough that exp needs no shift by the row maximum


def _max_row_norm(x) -> float:
    if x.size == 0:
        return 0.0
    work = np.result_type(x, np.float32)  # float16 squares would overflow at 256; a bound needs no more
    with np.errstate(over="ignore"):  # a huge row gives inf: the bound is then "unbounded", as it should
        return math.sqrt(float(np.einsum("...i,...i->...", x, x, dtype=work).max()))


def score_dtype(Q, K, V):
    """Where to compute attention, given its queries and keys.

    Every score obeys :math:`|q \\cdot k| / \\sqrt{d_k} \\le \\max\\|q\\| \\max\\|k\\| / \\sqrt{d_k}`
    (Cauchy-Schwarz). float16 is computed in float32 (NumPy has no fast
    float16 products); float32 moves to float64 when that bound does not fit
    float32.

    Returns
    -------
    ScoreType
    """
    dtype = np.result_type(Q, K, V, np.float32)
    bound = _max_row_norm(Q) * _max_row_norm(K) / math.sqrt(max(Q.shape[-1], 1))  # a Python float: inf, never an error
    if dtype == np.float32 and not bound < _HEADROOM * float(np.finfo(np.float32).max):
        dtype = np.dtype(np.float64)
    return ScoreType(dtype, not bound < _HEADROOM * float(np.finfo(dtype).max), bound < _NO_SHIFT[dtype])


def _largest_norm(A, axis) -> float:
    """The largest Euclidean length of ``A``'s slices along ``axis``, as a float (``inf``, never an error)."""
    if A.size == 0:
        return 0.0
    A = A.astype(np.float64)
    m = float(np.abs(A).max())
    return 0.0 if m == 0 else m * float(np.linalg.norm(A / m, axis=axis).max())  # scaled: no overflow


def loop_dtype(X, weights, h):
    r"""The narrowest float type, from the inputs' own, that holds every number of the head-by-head layer.

    By Cauchy-Schwarz, with :math:`x = \max_t \lVert X_t \rVert` and :math:`w_M` the longest
    column of ``M``: :math:`|q| \le x w_Q`, :math:`|q \cdot k| / \sqrt{d_k} \le \sqrt{d_k}\, x^2 w_Q w_K`,
    a weighted sum of values stays within :math:`x w_V`, and the output within
    :math:`\sqrt{h d_v}\, x w_V w_O`. ``weights`` holds the four matrices, queries first, output last.

    Raises
    ------
    ValueError
        If even float64 could overflow.
    """
    d_k, d_v = weights[0].shape[1] // h, weights[2].shape[1] // h
    x = _largest_norm(X, -1)
    w_Q, w_K, w_V, w_O = (_largest_norm(W, 0) for W in weights)
    bound = max(x * w_Q, x * w_K, x * w_V, math.sqrt(d_k) * (x * w_Q) * (x * w_K),
                math.sqrt(h * d_v) * (x * w_V) * w_O)
    dtype = np.result_type(X, *weights)
    for work in (dtype, np.dtype(np.float32), np.dtype(np.float64)):
        if work.itemsize >= dtype.itemsize and bound < _HEADROOM * float(np.finfo(work).max):
            return work
    raise ValueError(f"X (shape {X.shape}) and the weights are too large: the scores or the output could "
                     f"overflow float64 (bound {bound:.3g}). Scale them down (for example divide X by its largest "
                     "entry)")


def require_finite(*named):
    """Raise for the first of ``(description, array)`` pairs that holds a non-finite number."""
    for what, arr in named:
        if not np.isfinite(arr).all():
            raise ValueError(
                f"{what} overflowed: it holds infinite or NaN values (its type is {arr.dtype}). The inputs are "
                "finite but too large for this computation; scale them down (for example divide X by "
                "its largest entry)"
            )
