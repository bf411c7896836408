"""What the book's widgets share: colours, the figure width, numbers with a true minus, token labels."""

from __future__ import annotations

import numpy as np

from .._validate import check_labels
from ..plotting import OKABE_ITO, escape_math

__all__ = ["FIG_WIDTH", "PALETTE", "check_tokens", "colour", "label", "num", "parse_numbers"]

#: Okabe-Ito without black: one colour per token or head (black is kept for text and markers).
PALETTE = OKABE_ITO[:7]
FIG_WIDTH = 7.0  # inches at 100 dpi: about the width of the book's text column, so text shows at size


def num(x, fmt):
    """A number formatted with a true minus sign (read out as "minus")."""
    return format(x, fmt).replace("-", "\u2212")


def colour(i):
    """The colour of token or head ``i`` (the palette repeats after seven)."""
    return PALETTE[i % len(PALETTE)]


def check_tokens(tokens, n, what):
    """Token names as strings, one for each of ``n`` things (default ``token 1``, ``token 2``, ...)."""
    if tokens is None:
        return tuple(f"token {i + 1}" for i in range(n))
    if isinstance(tokens, str):
        raise TypeError(f"tokens must be a sequence of names, not one string ({tokens!r})")
    tokens = tuple(check_labels(tokens, "tokens", numbers_too=True))
    if len(tokens) != n:
        raise ValueError(f"tokens must name each of the {n} {what}, got {len(tokens)}: {tokens}")
    return tokens


def label(text):
    """Text for a matplotlib artist, drawn literally (a token such as ``$x^$`` is data, not a formula)."""
    return escape_math(text)


def parse_numbers(text, what):
    """Numbers separated by commas or spaces, as a float array."""
    try:
        return np.array([float(x) for x in text.replace(",", " ").split()])
    except ValueError:
        raise ValueError(f"could not read the {what} as numbers: {text!r}") from None
