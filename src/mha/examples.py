"""Worked examples as data.

The matrices of the running example come from Hao Ma, "The Transformer, Number
by Number" (see the book's references). They are chosen to be small whole
numbers, so that every step can be checked by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["WorkedExample", "i_love_llms"]


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
