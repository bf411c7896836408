"""What a check says: verdicts, the feedback a checker stops with, and safe text.

The part of :mod:`mha.checks.core` an exercise author edits to change how a
verdict looks or reads: the coloured box (:class:`Verdict`), the states and
their titles, the "not done" message, and the helpers that put learner text
into a message safely (shortened, backticks made plain quotes, escaped in
the HTML, never raising).

A checker stops with :func:`wrong` or :func:`not_done` (both raise
:class:`Feedback`); :func:`is_unfinished` recognises the placeholders a stub
leaves. :func:`short`, :func:`learner_text` and :func:`describe_error` serve
the other parts of the package.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from .deadline import is_ours

__all__ = ["Verdict", "Feedback", "wrong", "not_done", "is_unfinished", "safe_repr", "near_threshold",
           "short", "learner_text", "describe_error"]

_STATUSES = ("correct", "not done", "wrong")
# Plain symbols that common text fonts carry (emoji fonts are not everywhere).
_ICONS = {"correct": "\u2713", "wrong": "\u2717", "not done": "\u270e"}
_TITLES = {"correct": "Correct", "wrong": "Not quite", "not done": "Not done yet"}
# Okabe-Ito accents (colour-blind safe); the icon and the title carry the meaning too.
_ACCENTS = {"correct": ("#009E73", "#e8f6f0"), "wrong": ("#D55E00", "#fcefe6"),
            "not done": ("#0072B2", "#e8f1f8")}
# Inline code in a verdict takes the box's own text colour: a notebook or book theme's code
# colour (pale in dark themes) would be unreadable on the light box.
_VERDICT_CSS = ("<style>.mha-verdict code{color:inherit;background:rgba(127,127,127,0.18);"
                "border:0;padding:0 0.25em;border-radius:3px;}</style>")
_NOT_DONE = "replace the `...` with your answer (or write the function's body), then run this cell again."


# --------------------------------------------------------------------------- text

def short(text, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, so that no message floods the page."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def learner_text(text: str, limit: int) -> str:
    """Learner-supplied ``text``, shortened, with its backticks made plain quotes.

    A verdict's HTML shows `backticked` parts of a message as code; a backtick
    in the learner's own text must not start or end such a part.
    """
    return short(str(text).replace("`", "'"), limit)


def safe_repr(value, limit: int = 60) -> str:
    """``repr(value)`` for a message: shortened, backticks made quotes, never raising.

    Examples
    --------
    >>> safe_repr("a`b")
    "'a'b'"
    >>> safe_repr(list(range(100)), limit=12)
    '[0, 1, 2,...'
    """
    try:
        return learner_text(repr(value), limit)
    except BaseException as err:
        if is_ours(err):
            raise
    try:
        return f"<a {type(value).__name__}>"
    except BaseException as err:
        if is_ours(err):
            raise
        return "<an object>"


def describe_error(err: BaseException) -> str:
    """``"ValueError: message"`` for an exception, never raising."""
    try:
        text = learner_text(err, 200)
    except BaseException as inner:
        if is_ours(inner):
            raise
        text = ""
    name = learner_text(type(err).__name__, 60)
    return f"{name}: {text}" if text else name


def _code_to_html(message: str) -> str:
    """Escape ``message`` and show its `backticked` parts as code."""
    parts = html.escape(message).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def near_threshold(value: float, threshold: float, decimals: int = 3) -> str:
    """``value`` printed with enough decimals to show on which side of ``threshold`` it lies.

    Examples
    --------
    >>> near_threshold(0.9499, 0.95), near_threshold(0.31, 0.34), near_threshold(0.9500004, 0.95)
    ('0.9499', '0.310', '0.9500004')
    """
    value, threshold = float(value), float(threshold)
    if value == threshold or not math.isfinite(value):
        return f"{value:.{decimals}f}"
    for n in range(decimals, 17):
        shown = float(f"{value:.{n}f}")
        if shown != threshold and (shown > threshold) == (value > threshold):
            return f"{value:.{n}f}"
    return repr(value)


# --------------------------------------------------------------------------- verdicts

@dataclass(frozen=True)
class Verdict:
    """The result of a check.

    Attributes
    ----------
    label : str
        The exercise's label.
    status : str
        ``"correct"``, ``"not done"`` or ``"wrong"``.
    message : str
        One or two short sentences: what is right, or where to look.

    A verdict shows itself as a coloured box in Jupyter and in the built book
    (``_repr_html_``, with the message and label escaped) and as one line of
    text elsewhere.
    """

    label: str
    status: str
    message: str

    def __post_init__(self):
        if self.status not in _STATUSES:
            raise ValueError(f"status must be one of {_STATUSES}, got {self.status!r}")

    @property
    def ok(self) -> bool:
        """True when the answer is correct."""
        return self.status == "correct"

    def __str__(self) -> str:
        return f"{_ICONS[self.status]} {_TITLES[self.status]} ({self.label}): {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        line, fill = _ACCENTS[self.status]
        style = (f"border-left:5px solid {line};background:{fill};color:#1a1a1a;"
                 "padding:0.45em 0.8em;margin:0.3em 0;border-radius:4px;line-height:1.45;")
        return (
            _VERDICT_CSS
            + f'<div class="mha-verdict mha-verdict-{self.status.replace(" ", "-")}" role="status" '
            f'style="{style}">'
            f'<strong><span aria-hidden="true">{_ICONS[self.status]}</span> {_TITLES[self.status]}:</strong> '
            f"{_code_to_html(self.message)}"
            f' <span class="mha-verdict-label" style="color:#4a4a4a;font-size:0.85em;">'
            f"({html.escape(self.label)})</span></div>"
        )


class Feedback(Exception):
    """Raised inside a checker to stop with a verdict ("wrong" or "not done")."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def wrong(message: str):
    """Stop the check: the answer is wrong, and ``message`` says where to look."""
    raise Feedback("wrong", str(message))


def not_done(message: str = _NOT_DONE):
    """Stop the check: the exercise has not been attempted yet."""
    raise Feedback("not done", str(message))


# --------------------------------------------------------------------------- stubs

def is_unfinished(value) -> bool:
    """True for the placeholders a stub leaves.

    ``...`` and ``None``, and a list, tuple or dict that still holds ``...``
    (for example ``answer = (..., 512)``).

    Examples
    --------
    >>> is_unfinished(...), is_unfinished([3, ...]), is_unfinished((3, 4))
    (True, True, False)
    """
    return value is None or _holds_ellipsis(value, depth=0)


def _holds_ellipsis(value, depth: int) -> bool:
    if value is Ellipsis:
        return True
    if depth >= 4:
        return False
    if isinstance(value, (list, tuple)):
        items = value[:10_000]
    elif isinstance(value, dict):
        items = list(dict.values(value))[:10_000]
    elif isinstance(value, np.ndarray) and value.dtype == object:
        items = value.ravel()[:10_000].tolist()
    else:
        return False
    return any(_holds_ellipsis(item, depth + 1) for item in items)
