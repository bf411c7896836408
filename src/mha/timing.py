"""Small measurement helpers for the costs chapter and the benchmarks.

``best_time`` times a call, ``best_times`` and ``median_times`` time several
calls that take turns, ``peak_bytes`` measures the most memory a call held
at once (NumPy reports its arrays to :mod:`tracemalloc`),
``matmul_flops_per_s``, ``copy_bytes_per_s`` and ``measure_machine`` measure
how fast this machine multiplies and how fast it moves memory. The layer
written the slow, obvious way, one head at a time, is attention, and lives in
:mod:`mha.attention` (``multi_head_attention_loop``).
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from ._validate import check_positive_int
from .costs import Machine

__all__ = ["best_time", "best_times", "median_times", "round_times", "peak_bytes", "matmul_flops_per_s", "copy_bytes_per_s",
           "measure_machine"]


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
