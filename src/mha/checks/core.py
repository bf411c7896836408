"""The machinery behind every "Try it" check.

A checker is a function registered under an exercise's label with
:func:`checker`. It receives the learner's answer and either returns quietly
(correct) or raises :class:`Feedback` through :func:`wrong` or
:func:`not_done`. :func:`check` runs it and always returns a :class:`Verdict`:
it never raises, whatever the answer is, and it never prints the answer.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Feedback", "Verdict", "check", "checker", "labels", "wrong", "not_done",
    "call_learner", "answer_array", "expect_shape", "compare", "is_unfinished",
]

_REGISTRY: dict = {}

_ICONS = {"correct": "\u2705", "wrong": "\u274c", "not done": "\u270f\ufe0f"}
_TITLES = {"correct": "Correct", "wrong": "Not yet right", "not done": "Not done yet"}


@dataclass(frozen=True)
class Verdict:
    """The result of a check: ``status`` is "correct", "wrong" or "not done"."""

    label: str
    status: str
    message: str

    @property
    def ok(self) -> bool:
        return self.status == "correct"

    def __str__(self) -> str:
        return f"{_ICONS[self.status]} {_TITLES[self.status]} ({self.label}): {self.message}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return (
            f'<div class="mha-verdict mha-verdict-{self.status.replace(" ", "-")}" role="status">'
            f"<strong>{_ICONS[self.status]} {_TITLES[self.status]}</strong> "
            f"<code>{html.escape(self.label)}</code>: {html.escape(self.message)}</div>"
        )


class Feedback(Exception):
    """Raised inside a checker to stop with a verdict."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def wrong(message: str):
    """Stop the check: the answer is wrong, and ``message`` says where to look."""
    raise Feedback("wrong", message)


def not_done(message: str = "replace the ... (or the NotImplementedError) with your answer, then run this cell again."):
    """Stop the check: the exercise has not been attempted yet."""
    raise Feedback("not done", message)


def checker(label: str, *, kind: str, summary: str = ""):
    """Register ``func`` as the checker of the exercise ``label``.

    ``kind`` is "numeric" (the learner types values) or "code" (the learner
    writes a function).
    """
    if kind not in ("numeric", "code"):
        raise ValueError(f"kind must be 'numeric' or 'code', got {kind!r}")

    def register(func):
        if label in _REGISTRY:
            raise ValueError(f"exercise label {label!r} already has a checker")
        _REGISTRY[label] = (func, kind, summary or (func.__doc__ or "").strip().splitlines()[0])
        return func

    return register


def labels() -> dict:
    """Every registered exercise label, with its kind."""
    return {label: kind for label, (_, kind, _) in sorted(_REGISTRY.items())}


def check(label: str, answer) -> Verdict:
    """Check ``answer`` for the exercise ``label`` and return the verdict.

    Never raises and never prints the expected answer.
    """
    if label not in _REGISTRY:
        known = ", ".join(sorted(_REGISTRY))
        return Verdict(str(label), "wrong", f"there is no exercise called {label!r}. Known labels: {known}.")
    func, _, _ = _REGISTRY[label]
    try:
        if is_unfinished(answer):
            not_done()
        message = func(answer)
    except Feedback as fb:
        return Verdict(label, fb.status, fb.message)
    except Exception as err:  # a checker must survive any answer
        return Verdict(label, "wrong", f"your answer could not be checked ({type(err).__name__}: {err}). "
                                       "Look at its type and shape.")
    return Verdict(label, "correct", message or "well done.")


def is_unfinished(value) -> bool:
    """True for the placeholders a stub leaves: ``...`` and ``None``."""
    return value is None or value is Ellipsis


def call_learner(func, *args, name: str = "your function", **kwargs):
    """Call the learner's function; turn stubs and crashes into feedback."""
    if is_unfinished(func):
        not_done()
    if not callable(func):
        wrong(f"expected a function, got a {type(func).__name__}. Pass the function itself, without calling it.")
    try:
        result = func(*args, **kwargs)
    except NotImplementedError:
        not_done("the function still raises NotImplementedError: write its body, then run the cell again.")
    except Feedback:
        raise
    except Exception as err:
        shapes = ", ".join(str(np.shape(a)) for a in args if isinstance(a, np.ndarray))
        where = f" on inputs of shape {shapes}" if shapes else ""
        wrong(f"{name} raised {type(err).__name__}: {err}{where}. Run it on a small input and print the shapes "
              "step by step.")
    if is_unfinished(result):
        not_done(f"{name} returns {result!r}: make it return the result.")
    return result


def answer_array(value, what: str = "your answer") -> np.ndarray:
    """Read ``value`` (a number, list, tuple or array) as a float array, or give feedback."""
    if is_unfinished(value):
        not_done()
    if isinstance(value, (str, bytes)):
        wrong(f"{what} is text ({value!r}); it should be numbers.")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        wrong(f"{what} could not be read as numbers (got a {type(value).__name__}); "
              "check for ragged rows or text among the numbers.")
    if np.isnan(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isnan(arr))[0])
        wrong(f"{what} contains NaN at index {where}. NaN often comes from 0/0 or from exp of a huge "
              "number; print the intermediate results to find where it first appears.")
    if np.isinf(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isinf(arr))[0])
        wrong(f"{what} contains infinity at index {where}. An exp that overflowed? Subtract the row "
              "maximum before exp.")
    return arr


def expect_shape(arr: np.ndarray, shape: tuple, what: str = "your answer", hint: str = ""):
    """Give feedback unless ``arr`` has exactly ``shape``."""
    if arr.shape != tuple(shape):
        wrong(f"{what} has shape {arr.shape}, but the expected shape is {tuple(shape)}." + (f" {hint}" if hint else ""))


def compare(got, expected, what: str = "your answer", *, atol: float = 1e-8, rtol: float = 1e-6,
            mistakes=(), shape_hint: str = ""):
    """Compare an answer with the reference; name a classic mistake if one matches.

    Parameters
    ----------
    got, expected : array_like
    mistakes : sequence of (array_like, str)
        Results of known wrong methods and the message that names each one.
        A mistake is reported when ``got`` matches its result.
    """
    got = answer_array(got, what)
    expected = np.asarray(expected, dtype=float)
    for result, message in mistakes:
        result = np.asarray(result, dtype=float)
        if (result.shape == got.shape and not np.allclose(result, expected, atol=atol, rtol=rtol)
                and np.allclose(got, result, atol=atol, rtol=rtol)):
            wrong(message)
    expect_shape(got, expected.shape, what, shape_hint)
    close = np.isclose(got, expected, atol=atol, rtol=rtol)
    if not close.all():
        bad = np.argwhere(~close)
        where = tuple(int(i) for i in bad[0])
        off = float(np.abs(got - expected)[where]) if expected.ndim else float(abs(got - expected))
        more = f" ({len(bad)} entries differ in all)" if len(bad) > 1 else ""
        wrong(f"{what} differs at index {where} by {off:.3g}{more}.")
