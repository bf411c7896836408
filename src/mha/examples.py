"""Worked examples as data.

The matrices of the running example come from Hao Ma, "The Transformer, Number
by Number" (see the book's references). They are chosen to be small whole
numbers, so that every step can be checked by hand.

:func:`cat_sat_mat` is a layer set by hand so that each of its four heads has
one readable role; its embedding is built from named features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import (as_float_array, check_count, check_labels, check_ndim, check_number, check_positive_int,
                        check_size, is_sequence)

__all__ = ["RoleExample", "WorkedExample", "cat_sat_mat", "i_love_llms", "random_layer"]


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

    def __post_init__(self):
        """Check that the parts fit together: one token per row of ``X``, weights that chain, ``h`` heads that divide them."""
        tokens = tuple(check_labels(self.tokens, "tokens"))
        X = as_float_array(self.X, "X")
        check_ndim(X, "X", 2, "(T, d_model)", exact=True)
        if X.shape[0] == 0 or X.shape[1] == 0 or X.shape[0] != len(tokens):
            raise ValueError(f"X (shape {X.shape}) must have one row per token ({len(tokens)} tokens) and at least "
                             "one column")
        W = {}
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            W[name] = as_float_array(getattr(self, name), name)
            check_ndim(W[name], name, 2, "(rows, columns)", exact=True)
        d = X.shape[1]
        if not (W["W_Q"].shape[0] == W["W_K"].shape[0] == W["W_V"].shape[0] == d
                and W["W_Q"].shape[1] == W["W_K"].shape[1] and W["W_O"].shape[0] == W["W_V"].shape[1]):
            raise ValueError(f"the weights do not chain with X (shape {X.shape}): W_Q {W['W_Q'].shape}, W_K "
                             f"{W['W_K'].shape}, W_V {W['W_V'].shape}, W_O {W['W_O'].shape}; need W_Q, W_K (d, h d_k), "
                             "W_V (d, h d_v), W_O (h d_v, d_out)")
        h = check_positive_int(self.h, "h")
        if W["W_Q"].shape[1] % h or W["W_V"].shape[1] % h:
            raise ValueError(f"h={h} must divide the columns of W_Q {W['W_Q'].shape} and W_V {W['W_V'].shape}")
        for name, value in (("tokens", tokens), ("X", X), ("h", h), *W.items()):
            object.__setattr__(self, name, value)

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
    if tokens is None or not is_sequence(tokens):
        raise TypeError(f"tokens must be a sequence of words, got {tokens!r:.60} of type {type(tokens).__name__}")
    tokens = tuple(str(t) for t in tokens)
    if not tokens:
        raise ValueError("tokens must name at least one token")
    d = check_size(d, "d", high=2 ** 14)
    rng = np.random.default_rng(check_count(seed, "seed"))
    scale = check_number(scale, "scale", low=0.0, low_open=True)
    X = rng.standard_normal((len(tokens), d))
    W_Q, W_K, W_V, W_O = (rng.standard_normal((d, d)) * (scale / np.sqrt(d)) for _ in range(4))
    return WorkedExample(tokens=tokens, X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O, h=1)


@dataclass(frozen=True)
class RoleExample(WorkedExample):
    """A :class:`WorkedExample` whose heads were given one role each, by hand.

    Attributes
    ----------
    roles : tuple of str
        The role of each head when the layer is read with ``h`` heads, in head order.
    tags : tuple of str
        The part of speech of each token.
    features : tuple of str
        The name of each column of ``X``.
    """

    roles: tuple
    tags: tuple
    features: tuple

    def __post_init__(self):
        """As :class:`WorkedExample`, and one role per head, one tag per token, one feature name per column of ``X``."""
        super().__post_init__()
        roles, tags, features = (tuple(check_labels(getattr(self, name), name)) for name in ("roles", "tags", "features"))
        if len(roles) != self.h:
            raise ValueError(f"roles must name one role per head: h={self.h}, got {len(roles)} roles {roles!r:.80}")
        if len(tags) != len(self.tokens):
            raise ValueError(f"tags must give one part of speech per token: {len(self.tokens)} tokens, got "
                             f"{len(tags)} tags")
        if len(features) != self.X.shape[1]:
            raise ValueError(f"features must name every column of X (shape {self.X.shape}), got {len(features)}")
        for name, value in (("roles", roles), ("tags", tags), ("features", features)):
            object.__setattr__(self, name, value)


#: The feature blocks of :func:`cat_sat_mat`, each as wide as one of its four heads.
BLOCK = 8
PARTS_OF_SPEECH = ("determiner", "noun", "verb", "preposition", "adjective", "punctuation", "pronoun", "adverb")
VOCABULARY = ("the", "cat", "sat", "on", "warm", "mat", ".", "a")
FLAGS = ("delimiter", "bias", "spare 1", "spare 2", "spare 3", "spare 4", "spare 5", "spare 6")


def _one_hot(index, size):
    row = np.zeros(size)
    row[index] = 1.0
    return row


def cat_sat_mat():
    """Four heads set by hand on "the cat sat on the warm mat .": neighbour, part of speech, word, sink.

    Each token's row of ``X`` joins four blocks of 8 features: its position
    (one-hot), its part of speech (one-hot), the word itself (one-hot) and
    two flags (is it a delimiter; a bias that is always 1). Head ``i`` of
    ``h = 4`` (columns ``8i`` to ``8i + 7`` of Q and K) reads block ``i`` only:

    * neighbour: ``q = 3 e_t`` and ``k = 3 (e_{s-1} + e_{s+1})``, so
      ``q . k = 9`` when ``|t - s| = 1``;
    * part of speech and word: ``q = k = 3 x``, so ``q . k = 9`` for the
      same part of speech, or the same word (a token always matches itself);
    * sink: the bias gives every query 4, the delimiter flag gives "." the
      key 5, so ``q . k = 20`` on "." and 0 elsewhere.

    Every head's values are the word of the token it looks at (``W_V``), and
    ``W_O`` is the identity, which keeps the four reports side by side. Read
    the same matrices with ``h = 2`` or ``h = 1`` and the scores of the roles
    add up inside a head.

    Returns
    -------
    RoleExample
        ``d_model = 32``; ``X`` is (8, 32) and every weight (32, 32); ``h = 4``.

    Examples
    --------
    >>> ex = cat_sat_mat()
    >>> ex.roles
    ('neighbour', 'same part of speech', 'same word', 'delimiter sink')
    >>> (ex.X @ ex.W_Q)[1, :8] @ (ex.X @ ex.W_K)[:, :8].T    # "cat" meets its neighbours
    array([9., 0., 9., 0., 0., 0., 0., 0.])
    """
    tokens = ("the", "cat", "sat", "on", "the", "warm", "mat", ".")
    tags = ("determiner", "noun", "verb", "preposition", "determiner", "adjective", "noun", "punctuation")
    X = np.array([np.concatenate([_one_hot(t, BLOCK),                           # position
                                  _one_hot(PARTS_OF_SPEECH.index(tag), BLOCK),  # part of speech
                                  _one_hot(VOCABULARY.index(word), BLOCK),      # word identity
                                  [word == ".", 1, 0, 0, 0, 0, 0, 0]])          # delimiter, bias
                  for t, (word, tag) in enumerate(zip(tokens, tags))])          # (T, d) = (8, 32)
    position, tag, word, flag = (slice(i * BLOCK, (i + 1) * BLOCK) for i in range(4))
    eye, beside = np.eye(BLOCK), np.eye(BLOCK, k=1) + np.eye(BLOCK, k=-1)
    W_Q, W_K, W_V = np.zeros((3, 4 * BLOCK, 4 * BLOCK))
    W_Q[position, position], W_K[position, position] = 3 * eye, 3 * beside  # head 1: the tokens beside t
    W_Q[tag, tag], W_K[tag, tag] = 3 * eye, 3 * eye                          # head 2: the same part of speech
    W_Q[word, word], W_K[word, word] = 3 * eye, 3 * eye                      # head 3: the same word
    W_Q[flag.start + 1, flag.start] = 4.0                                    # head 4: every query (bias) ...
    W_K[flag.start, flag.start] = 5.0                                        # ... meets the delimiter
    for head in (position, tag, word, flag):
        W_V[word, head] = eye  # every head reports the words it looks at
    return RoleExample(tokens=tokens, X=_frozen(X), W_Q=_frozen(W_Q), W_K=_frozen(W_K), W_V=_frozen(W_V),
                       W_O=_frozen(np.eye(4 * BLOCK)), h=4,
                       roles=("neighbour", "same part of speech", "same word", "delimiter sink"), tags=tags,
                       features=tuple(f"position {i}" for i in range(BLOCK)) + PARTS_OF_SPEECH
                       + tuple(f"word {w!r}" for w in VOCABULARY) + FLAGS)
