"""Input checks shared by the library.

Every public function turns its inputs into arrays here, so that bad input
fails early with a message that names the argument, its shape and what was
expected, instead of an error from deep inside NumPy or a silent NaN.
"""

from __future__ import annotations

import numbers

import numpy as np


def as_float_array(x, name: str, *, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a clear error.

    Integers become float64; float32 and float64 keep their precision.

    Raises
    ------
    TypeError
        If ``x`` is not numeric (strings, objects, booleans, complex numbers).
    ValueError
        If ``x`` is ragged, or holds NaN or infinity (``-inf`` is allowed
        when ``allow_neg_inf`` is true).
    """
    if x is None:
        raise TypeError(f"{name} must be an array of numbers, got None")
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name} could not be read as a rectangular array of numbers ({err})") from None
    if arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind != "f":
        raise TypeError(
            f"{name} must hold real numbers, got an array of dtype {arr.dtype} with shape {arr.shape}"
        )
    if np.isfinite(arr).all():  # the common case: one fast pass
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
    arr = np.asarray(mask)
    if arr.dtype != np.bool_:
        raise TypeError(
            f"{name} must be a boolean array (True where a query may attend), "
            f"got dtype {arr.dtype} with shape {arr.shape}"
        )
    return arr


def check_positive_int(value, name: str) -> int:
    """Return ``value`` as an ``int`` if it is a positive whole number."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r} of type {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def check_ndim(arr: np.ndarray, name: str, ndim: int, legend: str, *, exact: bool = False) -> None:
    """Raise if ``arr`` has fewer (or, with ``exact``, other) than ``ndim`` axes."""
    if arr.ndim < ndim or (exact and arr.ndim != ndim):
        need = f"exactly {ndim}" if exact else f"at least {ndim}"
        raise ValueError(f"{name} must have {need} axes {legend}, got shape {arr.shape}")
