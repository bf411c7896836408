"""Running a model's independent pieces of work on a few threads.

NumPy's matrix products and array operations release Python's GIL, so two
Python threads, each calling a one-threaded BLAS, keep two cores busy. Two BLAS
threads inside one product would do the same on a quiet machine, but they wait
for each other at every product: when another job shares the machine, the page
got four times slower (chapter 09 measured 207 s against 54 s). Threads that
each own a whole piece of work just run slower.

The work is always cut into the same pieces, whatever the number of threads
(:func:`pieces`), and each piece is computed the same way; so the numbers never
depend on how many threads ran them.
"""

from __future__ import annotations

import concurrent.futures
import contextlib

from .._validate import check_positive_int

__all__ = ["ROWS_PER_PIECE", "check_threads", "pieces", "workers"]

#: About this many rows (texts or variants times positions) make one piece of work: enough for
#: BLAS to run at full speed, few enough that a batch splits into several pieces.
ROWS_PER_PIECE = 256


def check_threads(threads) -> int:
    """``threads`` as a positive int (a clear error otherwise)."""
    return check_positive_int(threads, "threads")


def pieces(n, T, rows=ROWS_PER_PIECE):
    """Slices that cut ``n`` sequences of ``T`` positions into pieces of about ``rows`` rows.

    >>> pieces(6, 256)
    [slice(0, 1, None), slice(1, 2, None), slice(2, 3, None), slice(3, 4, None), slice(4, 5, None), slice(5, 6, None)]
    >>> pieces(20, 38)                                  # 256 // 38 = 6 sequences a piece
    [slice(0, 6, None), slice(6, 12, None), slice(12, 18, None), slice(18, 20, None)]
    """
    size = max(1, rows // max(T, 1))
    return [slice(s, min(s + size, n)) for s in range(0, n, size)]


@contextlib.contextmanager
def workers(threads):
    """A function ``each(fn, items) -> [fn(x) for x in items]`` that uses up to ``threads`` threads.

    >>> with workers(2) as each:
    ...     each(lambda x: x * x, [1, 2, 3])
    [1, 4, 9]
    """
    threads = check_threads(threads)
    if threads == 1:
        yield lambda fn, items: [fn(x) for x in items]
        return
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        yield lambda fn, items: list(pool.map(fn, items))
