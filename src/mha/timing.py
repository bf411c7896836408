"""Small measurement helpers for the costs chapter and the benchmarks.

``best_time`` times a call, ``peak_bytes`` measures the most memory it held
at once (NumPy reports its arrays to :mod:`tracemalloc`), and
``multi_head_attention_loop`` is the layer written the slow, obvious way: one
head at a time, each with its own small matrix products.
"""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np

from ._validate import check_positive_int
from .attention import _check_layer, merge_heads, softmax

__all__ = ["best_time", "peak_bytes", "multi_head_attention_loop"]


def best_time(func, *args, repeat=5, number=1, **kwargs):
    """Shortest wall-clock time of ``number`` calls of ``func(*args, **kwargs)``, per call, in seconds.

    The minimum over ``repeat`` rounds is the least disturbed by other work on
    the machine.

    Examples
    --------
    >>> best_time(sum, range(10)) > 0
    True
    """
    repeat = check_positive_int(repeat, "repeat")
    number = check_positive_int(number, "number")
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            func(*args, **kwargs)
        best = min(best, (time.perf_counter() - start) / number)
    return best


def peak_bytes(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)``; return ``(result, peak)``.

    ``peak`` is the largest amount of memory, in bytes, that the call held
    at one time beyond what was held before it (the result included).

    Examples
    --------
    >>> _, peak = peak_bytes(np.zeros, 1_000_000)     # one million float64
    >>> peak >= 8_000_000
    True
    """
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = func(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if started:
            tracemalloc.stop()
    return result, peak - before


def multi_head_attention_loop(X, W_Q, W_K, W_V, W_O, h):
    """Multi-head attention with a Python loop over the heads.

    Head ``i`` projects ``X`` with its own ``d_k`` columns of ``W_Q``, ``W_K``
    and ``W_V``: ``3h`` narrow products where :func:`mha.multi_head_attention`
    does 3 wide ones. Same result, for timing the difference.

    Returns
    -------
    ndarray, shape (..., T, d_out)

    Examples
    --------
    >>> import mha
    >>> ex = mha.examples.i_love_llms()
    >>> Y, _ = mha.multi_head_attention(ex.X, *ex.weights, h=2)
    >>> np.allclose(multi_head_attention_loop(ex.X, *ex.weights, h=2), Y)
    True
    """
    X, W_Q, W_K, W_V, W_O, h, g, d_k, d_v = _check_layer(X, W_Q, W_K, W_V, W_O, h, None)
    heads = []
    for i in range(h):
        q = X @ W_Q[:, i * d_k:(i + 1) * d_k]  # (..., T, d) -> (..., T, d_k)
        k = X @ W_K[:, i * d_k:(i + 1) * d_k]  # (..., T, d) -> (..., T, d_k)
        v = X @ W_V[:, i * d_v:(i + 1) * d_v]  # (..., T, d) -> (..., T, d_v)
        A = softmax(q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k), axis=-1)  # (..., T, T)
        heads.append(A @ v)  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)
    concat = merge_heads(np.stack(heads, axis=-3))  # h x (..., T, d_v) -> (..., T, h*d_v)
    return concat @ W_O  # (..., T, h*d_v) -> (..., T, d_out)
