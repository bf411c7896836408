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

from .._validate import as_index_array, check_generator, check_positive_int, check_size

__all__ = ["BATCH", "LookupBatch", "N_ENTRIES", "N_SYMBOLS", "TEST_SEED", "TEST_SIZE", "check_batch", "check_n_keys",
           "lookup_batch", "test_set"]

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


def check_n_keys(n_keys) -> int:
    """``n_keys`` as an ``int`` if the query can name that many keys (1 to 8), else a clear error."""
    n_keys = check_positive_int(n_keys, "n_keys")
    if n_keys > N_ENTRIES:
        raise ValueError(f"n_keys={n_keys} asks for more keys than the {N_ENTRIES} entries hold")
    return n_keys


def check_batch(batch, n_keys: int, models: int | None = None) -> LookupBatch:
    """``batch`` if it is a :class:`LookupBatch` of ``models`` batches (a leading axis) asking ``n_keys`` keys.

    Keys and values must be integers from 0 to 15, ``asked`` positions from 0
    to 7; every array must hold the same lookups. Refusing an out-of-range value
    here is what keeps one model's batch from writing into another's one-hots.
    """
    if not isinstance(batch, LookupBatch):
        raise TypeError(f"batch must be a LookupBatch (mha.training.lookup_batch), got {type(batch).__name__}")
    arrays = {}
    for field, n in (("keys", N_SYMBOLS), ("values", N_SYMBOLS), ("asked", N_ENTRIES)):
        arr = as_index_array(getattr(batch, field), f"batch.{field}", n)
        legend = f"(M, B, {N_ENTRIES if field != 'asked' else 'n_keys'})"
        if arr.ndim != 3:
            raise ValueError(f"batch.{field} must have 3 axes {legend}: one batch per model; got shape {arr.shape}")
        arrays[field] = arr
    keys, values, asked = arrays["keys"], arrays["values"], arrays["asked"]
    if keys.shape[-1] != N_ENTRIES or values.shape != keys.shape:
        raise ValueError(f"batch.keys and batch.values must both be (M, B, {N_ENTRIES}), got {keys.shape} and "
                         f"{values.shape}")
    if asked.shape != keys.shape[:2] + (n_keys,):
        raise ValueError(f"batch.asked must be (M, B, n_keys) = {keys.shape[:2] + (n_keys,)} for these weights, "
                         f"got {asked.shape}")
    if models is not None and keys.shape[0] != models:
        raise ValueError(f"batch holds {keys.shape[0]} batches (shape {keys.shape}) for {models} models: "
                         "give one per model")
    return batch


def lookup_batch(rng, size, n_keys=2):
    """``size`` random lookups drawn with ``rng`` (a ``numpy.random.Generator``), each naming ``n_keys`` keys (1 to 8).

    Examples
    --------
    >>> b = lookup_batch(np.random.default_rng(0), 3)
    >>> b.keys.shape, b.asked.shape, bool((np.sort(b.keys, axis=1)[:, 1:] != np.sort(b.keys, axis=1)[:, :-1]).all())
    ((3, 8), (3, 2), True)
    """
    rng, size, n_keys = check_generator(rng), check_size(size, "size", high=2 ** 22), check_n_keys(n_keys)
    keys = _first_of_permutations(rng, size, N_SYMBOLS, N_ENTRIES)  # (B, 8), distinct in each row
    values = rng.integers(0, N_SYMBOLS, size=(size, N_ENTRIES))  # (B, 8)
    asked = _first_of_permutations(rng, size, N_ENTRIES, n_keys)  # (B, n_keys)
    return LookupBatch(keys, values, asked)


def test_set(n_keys=2):
    """The fixed test set: 8192 lookups from one fixed seed, the same for every run (read-only)."""
    return _test_set(check_n_keys(n_keys))


@functools.lru_cache(maxsize=8)
def _test_set(n_keys):
    batch = lookup_batch(np.random.default_rng(TEST_SEED), TEST_SIZE, n_keys)
    for a in (batch.keys, batch.values, batch.asked):
        a.setflags(write=False)
    return batch


test_set.__test__ = False  # not a pytest test
