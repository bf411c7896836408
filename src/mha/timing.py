"""Small measurement helpers for the costs chapter and the benchmarks.

``best_time`` times a call, ``best_times`` and ``median_times`` time several
calls that take turns, ``peak_bytes`` measures the most memory a call held
at once (NumPy reports its arrays to :mod:`tracemalloc`),
``matmul_flops_per_s``, ``copy_bytes_per_s`` and ``measure_machine`` measure
how fast this machine multiplies and how fast it moves memory, and
``multi_head_attention_loop`` is the layer written the slow, obvious way: one
head at a time, each with its own small matrix products. It computes in the
inputs' own float type when a bound on every intermediate number shows that
they fit (else in a wider type), and refuses inputs too large even for float64,
so finite input never comes back as NaN or infinity.
"""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np

from ._validate import as_float_array, check_ndim, check_positive_int
from .costs import Machine

__all__ = ["best_time", "best_times", "median_times", "round_times", "peak_bytes", "matmul_flops_per_s", "copy_bytes_per_s",
           "measure_machine", "multi_head_attention_loop"]


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


def round_times(funcs, *, repeat=5):
    """Every round's time of each zero-argument function in ``funcs`` (a dict): ``{name: [seconds, ...]}``.

    The functions take turns, round after round (see :func:`best_times`), so
    the times of one round were measured within moments of each other: the
    ratio of two functions' times in the same round is little moved by the
    machine getting slower or faster between rounds.

    Examples
    --------
    >>> t = round_times({"a": lambda: None, "b": lambda: None}, repeat=3)
    >>> sorted(t), len(t["a"])
    (['a', 'b'], 3)
    """
    repeat = check_positive_int(repeat, "repeat")
    if not isinstance(funcs, dict) or not all(callable(f) for f in funcs.values()):
        raise TypeError("funcs must be a dict of name -> function taking no arguments")
    times = {name: [] for name in funcs}
    for _ in range(repeat):
        for name, func in funcs.items():
            start = time.perf_counter()
            func()
            times[name].append(time.perf_counter() - start)
    return times


def best_times(funcs, *, repeat=5):
    """Shortest time of each zero-argument function in ``funcs`` (a dict), in seconds.

    The functions take turns, round after round, so a burst of other work on
    the machine slows all of them alike instead of only the one that happened
    to be running.

    Examples
    --------
    >>> t = best_times({"short": lambda: sum(range(10)), "long": lambda: sum(range(100_000))})
    >>> t["short"] < t["long"]
    True
    """
    return {name: min(times) for name, times in round_times(funcs, repeat=repeat).items()}


def median_times(funcs, *, repeat=5):
    """Median time of each zero-argument function in ``funcs`` (a dict), in seconds.

    The functions take turns, as in :func:`best_times`. The median of a few
    rounds ignores one slow round, and one lucky fast one too, so ratios of
    medians move less than ratios of minima when the machine is busy.

    Examples
    --------
    >>> t = median_times({"short": lambda: sum(range(10)), "long": lambda: sum(range(100_000))}, repeat=3)
    >>> t["short"] < t["long"]
    True
    """
    return {name: float(np.median(times)) for name, times in round_times(funcs, repeat=repeat).items()}


def matmul_flops_per_s(n=1024, *, repeat=3, dtype=np.float32):
    r"""FLOP/s of one ``n x n`` by ``n x n`` matrix product: :math:`2n^3` FLOPs over the best time.

    About the fastest this machine does arithmetic on the matrix library's
    current number of threads.

    Examples
    --------
    >>> matmul_flops_per_s(64, repeat=2) > 0
    True
    """
    n = check_positive_int(n, "n")
    rng = np.random.default_rng(0)
    A, B = (rng.standard_normal((n, n)).astype(dtype) for _ in range(2))  # (n, n) each
    out = np.empty((n, n), dtype=dtype)
    t = best_time(np.matmul, A, B, out=out, repeat=repeat)  # (n, n) @ (n, n) -> (n, n)
    return 2 * n**3 / t


def copy_bytes_per_s(n_bytes=64 * 2**20, *, repeat=5):
    """Bytes per second moved by a streaming copy of ``n_bytes`` into memory already written once.

    The copy reads every byte once and writes it once, so ``2 * n_bytes``
    bytes move per copy. Make ``n_bytes`` much larger than the processor's
    caches, so the copy measures main memory.

    Examples
    --------
    >>> copy_bytes_per_s(2**20, repeat=2) > 0
    True
    """
    n = check_positive_int(n_bytes, "n_bytes") // 8 or 1
    source = np.ones(n, dtype=np.float64)
    target = np.zeros_like(source)  # written once, so no first-touch cost in the timing
    t = best_time(np.copyto, target, source, repeat=repeat)
    return 2 * source.nbytes / t


def measure_machine(*, n=1024, n_bytes=64 * 2**20, repeat=3):
    """This machine's arithmetic rate and memory speed, as a :class:`mha.costs.Machine`.

    ``flops_per_s`` comes from :func:`matmul_flops_per_s` (float32),
    ``bytes_per_s`` from :func:`copy_bytes_per_s`; their ratio,
    ``flop_per_byte``, is how many FLOPs the machine can do in the time it
    moves one byte.

    Examples
    --------
    >>> m = measure_machine(n=64, n_bytes=2**20, repeat=2)
    >>> m.flop_per_byte > 0
    True
    """
    repeat = check_positive_int(repeat, "repeat")
    return Machine("this machine", matmul_flops_per_s(n, repeat=repeat),
                   copy_bytes_per_s(n_bytes, repeat=repeat + 2))


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


# Every intermediate number may reach this fraction of its type's largest one: the softmax's shift
# by the row maximum can double a score.
_HEADROOM = 0.25


def _largest_norm(A, axis):
    """The largest Euclidean length of ``A``'s slices along ``axis``, as a float (``inf``, never an error)."""
    if A.size == 0:
        return 0.0
    A = A.astype(np.float64)
    m = float(np.abs(A).max())
    return 0.0 if m == 0 else m * float(np.linalg.norm(A / m, axis=axis).max())  # scaled: no overflow


def _loop_dtype(X, W, h, d_k, d_v):
    r"""The narrowest float type, from the inputs' own, that holds every number the loop computes.

    By Cauchy-Schwarz, with :math:`x = \max_t \lVert X_t \rVert` and :math:`w_M` the longest
    column of ``M``: :math:`|q| \le x w_Q`, :math:`|q \cdot k| / \sqrt{d_k} \le \sqrt{d_k}\, x^2 w_Q w_K`,
    a weighted sum of values stays within :math:`x w_V`, and the output within
    :math:`\sqrt{h d_v}\, x w_V w_O`.
    """
    x = _largest_norm(X, -1)
    w_Q, w_K, w_V, w_O = (_largest_norm(W[name], 0) for name in ("W_Q", "W_K", "W_V", "W_O"))
    bound = max(x * w_Q, x * w_K, x * w_V, math.sqrt(d_k) * (x * w_Q) * (x * w_K),
                math.sqrt(h * d_v) * (x * w_V) * w_O)
    dtype = np.result_type(X, *W.values())
    for work in (dtype, np.dtype(np.float32), np.dtype(np.float64)):
        if work.itemsize >= dtype.itemsize and bound < _HEADROOM * float(np.finfo(work).max):
            return work
    raise ValueError(f"X (shape {X.shape}) and the weights are too large: the scores or the output could "
                     f"overflow float64 (bound {bound:.3g}). Scale them down (for example divide X by its largest "
                     "entry)")


def _check_loop_layer(X, h, **weights):
    """Arrays, in a float type their results fit, and sizes ``(h, d_k, d_v)`` of a plain multi-head layer."""
    X = as_float_array(X, "X")
    check_ndim(X, "X", 2, "(..., T, d_model)")
    W = {name: as_float_array(w, name) for name, w in weights.items()}
    for name, w in W.items():
        check_ndim(w, name, 2, "(rows, columns)", exact=True)
    h = check_positive_int(h, "h")
    d = X.shape[-1]
    if W["W_Q"].shape != W["W_K"].shape or W["W_Q"].shape[0] != d or W["W_V"].shape[0] != d:
        raise ValueError(f"W_Q {W['W_Q'].shape} and W_K {W['W_K'].shape} must have the same shape, and "
                         f"W_Q, W_K, W_V {W['W_V'].shape} must have d_model={d} rows (X has shape {X.shape})")
    if W["W_Q"].shape[1] % h or W["W_V"].shape[1] % h or W["W_O"].shape[0] != W["W_V"].shape[1]:
        raise ValueError(f"h={h} must divide the widths of W_Q {W['W_Q'].shape} and W_V {W['W_V'].shape}, "
                         f"and W_O {W['W_O'].shape} needs as many rows as W_V has columns")
    if X.shape[-2] == 0 or W["W_Q"].shape[1] == 0:
        raise ValueError(f"X {X.shape} needs at least one position (T >= 1) and W_Q {W['W_Q'].shape} at least "
                         "one column per head (d_k >= 1)")
    d_k, d_v = W["W_Q"].shape[1] // h, W["W_V"].shape[1] // h
    work = _loop_dtype(X, W, h, d_k, d_v)
    return X.astype(work, copy=False), {n: w.astype(work, copy=False) for n, w in W.items()}, h, d_k, d_v


def multi_head_attention_loop(X, W_Q, W_K, W_V,  # as in mha.multi_head_attention
                              W_O, h):
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
    X, W, h, d_k, d_v = _check_loop_layer(X, h, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O)
    heads = []
    for i in range(h):
        q = X @ W["W_Q"][:, i * d_k:(i + 1) * d_k]  # (..., T, d) -> (..., T, d_k)
        k = X @ W["W_K"][:, i * d_k:(i + 1) * d_k]  # (..., T, d) -> (..., T, d_k)
        v = X @ W["W_V"][:, i * d_v:(i + 1) * d_v]  # (..., T, d) -> (..., T, d_v)
        scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
        A = np.exp(scores - scores.max(axis=-1, keepdims=True))  # softmax, as in the core
        A /= A.sum(axis=-1, keepdims=True)
        heads.append(A @ v)  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)
    concat = np.concatenate(heads, axis=-1)  # h x (..., T, d_v) -> (..., T, h*d_v)
    return concat @ W["W_O"]  # (..., T, h*d_v) -> (..., T, d_out)
