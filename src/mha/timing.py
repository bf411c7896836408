"""Small measurement helpers for the costs chapter and the benchmarks.

``best_time`` times a call, ``best_times`` and ``median_times`` time several
calls that take turns, ``peak_bytes`` measures the most memory a call held
at once (NumPy reports its arrays to :mod:`tracemalloc`),
``matmul_flops_per_s``, ``copy_bytes_per_s`` and ``measure_machine`` measure
how fast this machine multiplies and how fast it moves memory.
``layer_parts`` cuts the layer into its steps, so that each can be timed
alone, and ``spread`` sums up repeated measurements (median, least, most).
The layer written the slow, obvious way, one head at a time, is attention,
and lives in :mod:`mha.attention` (``multi_head_attention_loop``).
"""

from __future__ import annotations

import math
import time
import tracemalloc
from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, check_positive_int, score_dtype
from .attention import multi_head_attention
from .costs import Machine

__all__ = ["best_time", "best_times", "median_times", "round_times", "peak_bytes", "matmul_flops_per_s", "copy_bytes_per_s",
           "measure_machine", "layer_parts", "Spread", "spread"]

#: Upper bounds on the counts a caller may ask for: a typo such as ``repeat=10**20`` gets a
#: clear error instead of a loop that never ends, or an array larger than any memory.
MAX_REPEAT, MAX_NUMBER, MAX_N, MAX_BYTES = 10_000, 10_000_000, 16_384, 2**34


def _count(value, name, high):
    """``value`` as a positive ``int`` of at most ``high``."""
    value = check_positive_int(value, name)
    if value > high:
        raise ValueError(f"{name}={value} is too large for a measurement: at most {high:,}")
    return value


def best_time(func, *args, repeat=5, number=1, **kwargs):
    """Shortest wall-clock time of ``number`` calls of ``func(*args, **kwargs)``, per call, in seconds.

    The minimum over ``repeat`` rounds is the least disturbed by other work on
    the machine.

    Examples
    --------
    >>> best_time(sum, range(10)) > 0
    True
    """
    repeat = _count(repeat, "repeat", MAX_REPEAT)
    number = _count(number, "number", MAX_NUMBER)
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
    repeat = _count(repeat, "repeat", MAX_REPEAT)
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
    n = _count(n, "n", MAX_N)
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
    n = _count(n_bytes, "n_bytes", MAX_BYTES) // 8 or 1
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
    repeat = _count(repeat, "repeat", MAX_REPEAT - 2)
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


def layer_parts(X, W_Q, W_K, W_V,  # tokens (T, d) and the three input projections
                W_O, h):  # the output projection, the number of heads
    r"""The steps of one multi-head attention layer, each as a function of no arguments, to time apart.

    ``X`` is ``(T, d)``; the four weight matrices are as in the layer,
    with one key/value head per query head. The returned dict holds:

    * ``"projections"``: :math:`XW^Q`, :math:`XW^K`, :math:`XW^V` and the joined heads times :math:`W^O`;
    * ``"scores"``: :math:`Q_i K_i^\top / \sqrt{d_k}` for every head, one stacked product;
    * ``"softmax"``: the softmax of every row of the ``(h, T, T)`` scores, in place, as the
      layer runs it (the row maximum is subtracted only when the scores could be large,
      as :func:`mha._validate.score_dtype` decides for the layer);
    * ``"weighted sum"``: :math:`A_i V_i` for every head, one stacked product;
    * ``"layer"``: :func:`mha.multi_head_attention` itself, for comparison.

    The parts work on arrays computed once here, so each call does only its own step. The
    softmax of softmax weights costs what the softmax of scores costs (the same passes over
    the same number of entries), so it may run again and again on one array. Together the
    parts give the layer's output (the tests check it).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> parts = layer_parts(rng.standard_normal((8, 4)), *rng.standard_normal((4, 4, 4)), h=2)
    >>> sorted(parts)
    ['layer', 'projections', 'scores', 'softmax', 'weighted sum']
    """
    X = as_float_array(X, "X")
    if X.ndim != 2:
        raise ValueError(f"X must be (T, d), got shape {X.shape}")
    W_Q, W_K, W_V, W_O = (as_float_array(W, name) for W, name in
                          ((W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V"), (W_O, "W_O")))
    h = check_positive_int(h, "h")
    weights = (W_Q, W_K, W_V, W_O)
    multi_head_attention(X, *weights, h=h)  # every shape and value check of the layer
    T, d = X.shape
    d_k, d_v = W_Q.shape[1] // h, W_V.shape[1] // h
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (T, d) -> (T, h*d_k), (T, h*d_k), (T, h*d_v)
    Q_i = Q.reshape(T, h, d_k).swapaxes(0, 1)  # (T, h*d_k) -> (h, T, d_k), a view as in the layer
    K_i = K.reshape(T, h, d_k).swapaxes(0, 1)  # (T, h*d_k) -> (h, T, d_k)
    V_i = V.reshape(T, h, d_v).swapaxes(0, 1)  # (T, h*d_v) -> (h, T, d_v)
    shift = not score_dtype(Q_i, K_i, V_i).small
    scale = 1 / math.sqrt(d_k)
    A = (Q_i * scale) @ K_i.swapaxes(-1, -2)  # (h, T, d_k) @ (h, d_k, T) -> (h, T, T)
    Z = A @ V_i  # (h, T, T) @ (h, T, d_v) -> (h, T, d_v)
    concat = np.ascontiguousarray(Z.swapaxes(0, 1)).reshape(T, h * d_v)  # (h, T, d_v) -> (T, h*d_v)

    def projections():
        return X @ W_Q, X @ W_K, X @ W_V, concat @ W_O  # three (T, d) @ (d, ·) and (T, h*d_v) @ (h*d_v, d)

    def scores():
        return (Q_i * scale) @ K_i.swapaxes(-1, -2)  # (h, T, d_k) @ (h, d_k, T) -> (h, T, T)

    def softmax():
        if shift:
            np.subtract(A_work, A_work.max(axis=-1, keepdims=True), out=A_work)  # every exponent <= 0
        np.exp(A_work, out=A_work)
        np.multiply(A_work, 1 / A_work.sum(axis=-1, keepdims=True), out=A_work)  # (h, T, T), rows sum to 1

    def weighted_sum():
        return A @ V_i  # (h, T, T) @ (h, T, d_v) -> (h, T, d_v)

    A_work = A.copy()
    return {"projections": projections, "scores": scores, "softmax": softmax,
            "weighted sum": weighted_sum, "layer": lambda: multi_head_attention(X, *weights, h=h)}


@dataclass(frozen=True)
class Spread:
    """Repeated measurements of one quantity: the median, the least and the most, and how many."""

    median: float
    low: float
    high: float
    n: int


def spread(values):
    """The :class:`Spread` of a sequence of measurements (at least one, all finite).

    Examples
    --------
    >>> spread([3.0, 1.0, 2.0])
    Spread(median=2.0, low=1.0, high=3.0, n=3)
    """
    values = as_float_array(values, "values")
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"values must be a non-empty sequence of numbers, got shape {values.shape}")
    if not np.isfinite(values).all():
        raise ValueError("values must be finite")
    return Spread(float(np.median(values)), float(values.min()), float(values.max()), int(values.size))
