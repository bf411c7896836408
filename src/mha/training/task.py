"""The dictionary lookup: random lookups, and the one fixed test set every run is scored on.

The input is a list of 8 entries, each a (key, value) pair, with 8 different
keys out of 16 and values out of 16, in random order; then one query token
that names ``n_keys`` of those keys. The model must answer every named key's
value. Chance is 1/16 per answer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

__all__ = ["BATCH", "LookupBatch", "N_ENTRIES", "N_SYMBOLS", "TEST_SEED", "TEST_SIZE", "lookup_batch", "test_set"]

N_ENTRIES = 8  # (key, value) entries in every input
N_SYMBOLS = 16  # possible keys, and possible values
BATCH = 256  # fresh lookups per training step
TEST_SIZE = 8192
TEST_SEED = 20170612  # the one fixed test set every run is scored on


@dataclass(frozen=True)
class LookupBatch:
    """A batch of lookups.

    Attributes
    ----------
    keys, values : ndarray of int, shape (..., B, 8)
        The entries; the keys of one row are all different.
    asked : ndarray of int, shape (..., B, n_keys)
        Which entries the query names (positions 0 .. 7, all different).

    A leading axis, if any, holds one batch per model trained side by side.
    """

    keys: np.ndarray
    values: np.ndarray
    asked: np.ndarray

    @functools.cached_property
    def asked_keys(self):
        """The keys the query names, ``(B, n_keys)``."""
        return np.take_along_axis(self.keys, self.asked, axis=-1)

    @functools.cached_property
    def answers(self):
        """The values to answer, ``(B, n_keys)``."""
        return np.take_along_axis(self.values, self.asked, axis=-1)


def _first_of_permutations(rng, size, n, k):
    """``size`` rows of ``k`` different numbers from ``0 .. n-1``, uniformly at random."""
    return np.argsort(rng.random((size, n)), axis=1)[:, :k]


def lookup_batch(rng, size, n_keys=2):
    """``size`` random lookups drawn with ``rng`` (a ``numpy.random.Generator``).

    Examples
    --------
    >>> b = lookup_batch(np.random.default_rng(0), 3)
    >>> b.keys.shape, b.asked.shape, bool((np.sort(b.keys, axis=1)[:, 1:] != np.sort(b.keys, axis=1)[:, :-1]).all())
    ((3, 8), (3, 2), True)
    """
    keys = _first_of_permutations(rng, size, N_SYMBOLS, N_ENTRIES)  # (B, 8), distinct in each row
    values = rng.integers(0, N_SYMBOLS, size=(size, N_ENTRIES))  # (B, 8)
    asked = _first_of_permutations(rng, size, N_ENTRIES, n_keys)  # (B, n_keys)
    return LookupBatch(keys, values, asked)


@functools.lru_cache(maxsize=8)
def test_set(n_keys=2):
    """The fixed test set: 8192 lookups from one fixed seed, the same for every run (read-only)."""
    batch = lookup_batch(np.random.default_rng(TEST_SEED), TEST_SIZE, n_keys)
    for a in (batch.keys, batch.values, batch.asked):
        a.setflags(write=False)
    return batch


test_set.__test__ = False  # not a pytest test
