"""Worked examples as data.

The matrices of the running example come from Hao Ma, "The Transformer, Number
by Number" (see the book's references). They are chosen to be small whole
numbers, so that every step can be checked by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import check_count, check_number, check_positive_int

__all__ = ["WorkedExample", "i_love_llms", "random_layer"]


@dataclass(frozen=True)
class WorkedExample:
    """A sentence, its embeddings and the weights of one attention layer.

    Attributes
    ----------
    tokens : tuple of str
        One entry per row of ``X``.
    X : ndarray, shape (T, d_model)
    W_Q, W_K, W_V : ndarray, shape (d_model, d_model)
    W_O : ndarray, shape (d_model, d_model)
    h : int
        The number of heads the example is worked with.
    """

    tokens: tuple
    X: np.ndarray
    W_Q: np.ndarray
    W_K: np.ndarray
    W_V: np.ndarray
    W_O: np.ndarray
    h: int

    @property
    def weights(self):
        """The four weight matrices, in the order ``(W_Q, W_K, W_V, W_O)``."""
        return self.W_Q, self.W_K, self.W_V, self.W_O


def _frozen(rows):
    a = np.array(rows, dtype=np.float64)
    a.setflags(write=False)
    return a


def i_love_llms():
    """The running example: "I love LLMs", ``d_model = 4``, two heads of width 2.

    Rows of ``X`` are the tokens; the arrays are read-only, so a chapter cannot
    change them by accident.

    Examples
    --------
    >>> ex = i_love_llms()
    >>> ex.tokens
    ('I', 'love', 'LLMs')
    >>> (ex.X @ ex.W_Q).astype(int)
    array([[2, 1, 0, 0],
           [1, 2, 0, 1],
           [1, 0, 1, 2]])
    """
    return WorkedExample(
        tokens=("I", "love", "LLMs"),
        X=_frozen([[0, 0, 1, 1], [0, 1, 0, 1], [1, 0, 0, 1]]),
        W_Q=_frozen([[0, -1, 1, 1], [0, 1, 0, 0], [1, 0, 0, -1], [1, 1, 0, 1]]),
        W_K=_frozen([[0, -1, 0, 1], [-1, 1, 0, 0], [1, -1, 1, -1], [1, 1, 0, 1]]),
        W_V=_frozen([[0, 0, 1, 0], [1, 0, 0, 1], [0, 1, 0, 0], [1, 0, 0, 0]]),
        W_O=_frozen([[0, 0, 1, 1], [1, 1, 0, 0], [0, 1, -1, 1], [1, 0, 0, 0]]),
        h=2,
    )


def random_layer(tokens, d, *, seed=0, scale=1.3):
    """A seeded random attention layer for a sentence, as a :class:`WorkedExample`.

    ``X`` has standard normal entries; ``W_Q``, ``W_K``, ``W_V`` and ``W_O``
    have standard deviation ``scale / sqrt(d)``, so every entry of ``Q`` has
    standard deviation ``scale`` and the scaled scores about ``scale**2``,
    whatever the head width. ``h`` is set to 1: the layer can be split any way.

    Parameters
    ----------
    tokens : sequence of str
        The sentence, one entry per row of ``X`` (at least one).
    d : int
        Model width.
    seed : int
        Seed of the random numbers (at least 0).
    scale : float
        Positive, finite.

    Examples
    --------
    >>> layer = random_layer(("the", "cat", "sat"), d=6)
    >>> layer.X.shape, layer.W_Q.shape
    ((3, 6), (6, 6))
    """
    if isinstance(tokens, str):
        raise TypeError(f"tokens must be a sequence of words, not one string ({tokens!r}); "
                        "split it first, e.g. tokens.split()")
    tokens = tuple(str(t) for t in tokens)
    if not tokens:
        raise ValueError("tokens must name at least one token")
    d = check_positive_int(d, "d")
    rng = np.random.default_rng(check_count(seed, "seed"))
    scale = check_number(scale, "scale", low=0.0, low_open=True)
    X = rng.standard_normal((len(tokens), d))
    W_Q, W_K, W_V, W_O = (rng.standard_normal((d, d)) * (scale / np.sqrt(d)) for _ in range(4))
    return WorkedExample(tokens=tokens, X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O, h=1)
