"""The machinery behind every "Try it" check.

A checker is a function registered under an exercise's label with
:func:`checker`. It receives the learner's answer and either returns quietly
(correct, optionally with a short message) or stops with :func:`wrong` or
:func:`not_done`. :func:`check` runs it and always returns a :class:`Verdict`
with one of three states: "correct", "not done" or "wrong".

Promises that every checker relies on:

* :func:`check` never raises and never writes to stderr, whatever the answer
  is (``None``, ``...``, text, lists, NaN, objects, a function that raises or
  returns nonsense). NumPy and Python warnings are silenced during a check.
* No message states the expected answer. Messages say *where* an answer is
  wrong (its shape, the first entry that differs, whether it is too large or
  too small) and name a recognised mistake, never the value that was expected.

Examples
--------
>>> from mha.checks import check
>>> check("ex-split-heads", ...).status
'not done'
>>> check("ex-split-heads", "split_heads").status
'wrong'
"""

from __future__ import annotations

import contextlib
import difflib
import html
import inspect
import io
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Feedback", "Verdict", "check", "checker", "labels", "wrong", "not_done",
    "call_learner", "answer_array", "expect_shape", "compare", "is_unfinished",
]

_REGISTRY: dict = {}

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


def _short(text, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, so that no message floods the page."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _safe_repr(value, limit: int = 60) -> str:
    """``repr(value)``, shortened, and never raising."""
    try:
        return _short(repr(value), limit)
    except Exception:
        return f"<a {type(value).__name__}>"


def _describe_error(err: BaseException) -> str:
    """``"ValueError: message"`` for an exception, never raising."""
    try:
        text = str(err)
    except Exception:
        text = ""
    name = type(err).__name__
    return f"{name}: {_short(text, 200)}" if text else name


def _code_to_html(message: str) -> str:
    """Escape ``message`` and show its `backticked` parts as code."""
    parts = html.escape(message).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


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
    (``_repr_html_``) and as one line of text elsewhere.
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
    """Raised inside a checker to stop with a verdict."""

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


def checker(label: str, *, kind: str, summary: str = ""):
    """Register the decorated function as the checker of the exercise ``label``.

    Parameters
    ----------
    label : str
        The exercise's ``:label:`` in the book, e.g. ``"ex-split-heads"``.
    kind : {"numeric", "code"}
        "numeric": the learner types values. "code": the learner writes a
        function, which the checker calls on fixed cases.
    summary : str, optional
        One line on what is checked; defaults to the docstring's first line.

    The checker receives the answer (never ``None`` or ``...``: :func:`check`
    answers those itself) and returns ``None`` or a short praise message when
    the answer is right. Reloading the module that defines it is allowed;
    two different functions for one label are not.
    """
    if kind not in ("numeric", "code"):
        raise ValueError(f"kind must be 'numeric' or 'code', got {kind!r}")
    if not isinstance(label, str) or not label:
        raise TypeError(f"label must be a non-empty string, got {label!r}")

    def register(func):
        old = _REGISTRY.get(label)
        if old is not None and (old[0].__module__, old[0].__qualname__) != (func.__module__, func.__qualname__):
            raise ValueError(f"exercise label {label!r} already has a checker: "
                             f"{old[0].__module__}.{old[0].__qualname__}")
        doc_line = (func.__doc__ or "").strip().splitlines()
        _REGISTRY[label] = (func, kind, summary or (doc_line[0] if doc_line else ""))
        return func

    return register


def labels() -> dict:
    """Every registered exercise label, with its kind ("numeric" or "code")."""
    return {label: kind for label, (_, kind, _) in sorted(_REGISTRY.items())}


def _unknown_label(label) -> Verdict:
    if not isinstance(label, str):
        return Verdict(_safe_repr(label), "wrong",
                       "the first argument should be the exercise's label, as text, e.g. \"ex-split-heads\".")
    close = difflib.get_close_matches(label, list(_REGISTRY), n=1)
    hint = f" Did you mean \"{close[0]}\"?" if close else " Copy the label from the exercise box."
    return Verdict(_short(label, 60), "wrong", f"there is no exercise called \"{_short(label, 60)}\".{hint}")


def check(label: str, answer) -> Verdict:
    """Check ``answer`` for the exercise ``label`` and return the verdict.

    Never raises, never writes to stderr and never states the expected answer.

    Parameters
    ----------
    label : str
        The exercise's label, e.g. ``"ex-split-heads"``.
    answer : object
        The learner's value or function. ``...`` and ``None`` mean "not done yet".

    Returns
    -------
    Verdict
    """
    if not isinstance(label, str) or label not in _REGISTRY:
        return _unknown_label(label)
    func, _, _ = _REGISTRY[label]
    try:
        with _quiet():
            if is_unfinished(answer):
                not_done()
            message = func(answer)
    except Feedback as fb:
        status = fb.status if fb.status in _STATUSES else "wrong"
        return Verdict(label, status, _short(fb.message, 600))
    except Exception as err:  # a checker must survive any answer
        return Verdict(label, "wrong", f"your answer could not be checked ({_describe_error(err)}). "
                                       "Look at its type and shape.")
    return Verdict(label, "correct", _short(message, 600) if isinstance(message, str) and message
                   else "well done.")


@contextlib.contextmanager
def _quiet():
    """Silence warnings, NumPy floating-point reports and stray writes to stderr."""
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


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
        items = value
    elif isinstance(value, dict):
        items = list(value.values())
    elif isinstance(value, np.ndarray) and value.dtype == object:
        items = value.ravel().tolist()
    else:
        return False
    return any(_holds_ellipsis(item, depth + 1) for item in items[:10_000])


def _param_names(func, n: int) -> list:
    """Names of the first ``n`` positional parameters of ``func``, for messages."""
    try:
        params = [p.name for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"argument {i + 1}" for i in range(n)]


def call_learner(func, *args, name: str = "your function", case: str = "", signature: str = "",
                 hint: str = "", **kwargs):
    """Call the learner's function on copies of its inputs; turn stubs and crashes into feedback.

    Parameters
    ----------
    func : callable
        The learner's function (``...`` or ``None`` mean "not done").
    *args, **kwargs
        Passed on. Arrays are passed as fresh writable copies and compared
        afterwards: a function that changes its input gets a message.
    name : str
        How to call the function in messages, e.g. ``"split_heads"``.
    case : str
        Describes the inputs in messages, e.g. ``"X of shape (2, 4, 8) and h=2"``.
    signature : str
        The call the exercise expects, shown when the function's parameters do not fit.
    hint : str
        Where to look when the function raises on this case.

    Returns
    -------
    object
        What the function returned (never ``None``).
    """
    if is_unfinished(func):
        not_done()
    if not callable(func):
        wrong(f"expected a function, got a {type(func).__name__}. Pass the function itself, "
              f"without calling it: write `{name}`, not `{name}(...)`.")
    originals = [np.array(a, copy=True) if isinstance(a, np.ndarray) else None for a in args]
    given = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    where = f" for {case}" if case else ""
    try:
        result = func(*given, **kwargs)
    except NotImplementedError:
        not_done(f"`{name}` still raises NotImplementedError: write its body, then run the cell again.")
    except Feedback:
        raise
    except (Exception, SystemExit) as err:
        if signature and isinstance(err, TypeError) and "argument" in _describe_error(err):
            look = f"The exercise calls it as `{signature}`."
        else:
            look = hint or "Run it on a small input and print the shapes step by step."
        wrong(f"`{name}` raised {_describe_error(err)}{where}. {look}")
    names = _param_names(func, len(args))
    for arg_name, before, after in zip(names, originals, given):
        if before is not None and not (before.shape == after.shape
                                       and np.array_equal(before, after, equal_nan=True)):
            wrong(f"`{name}` changed its input `{arg_name}` in place{where}. Work on new arrays "
                  "(for example `x = x - m`, not `x -= m`), so the caller's data stays as it was.")
    if result is None:
        not_done(f"`{name}` returns None: end it with a `return` of the result.")
    if is_unfinished(result):
        not_done(f"`{name}` returns `...`: make it return the result.")
    return result


def answer_array(value, what: str = "your answer") -> np.ndarray:
    """Read ``value`` (a number, list, tuple or array) as a float array, or give feedback.

    Text, booleans, ragged lists, objects, NaN and infinity each get a message.
    """
    if is_unfinished(value):
        not_done()
    if isinstance(value, (str, bytes)):
        wrong(f"{what} is text ({_safe_repr(value, 40)}); it should be numbers, without quotes.")
    if isinstance(value, (bool, np.bool_)):
        wrong(f"{what} is {value}, a yes/no value; it should be a number.")
    try:
        arr = np.asarray(value, dtype=float)
    except Exception:
        wrong(f"{what} could not be read as numbers (got a {type(value).__name__}). "
              "Check for ragged rows, text or other objects among the numbers.")
    if np.isnan(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isnan(arr))[0])
        wrong(f"{what} contains NaN at index {where}. NaN often comes from 0/0, from 0 times "
              "infinity, or from exp of a huge number: print the intermediate results to find where it "
              "first appears.")
    if np.isinf(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isinf(arr))[0])
        wrong(f"{what} contains infinity at index {where}. An exp that overflowed? Subtract the row "
              "maximum before exp.")
    return arr


def expect_shape(arr: np.ndarray, shape: tuple, what: str = "your answer", hint: str = ""):
    """Give feedback unless ``arr`` has exactly ``shape`` (the expected shape is named)."""
    if np.shape(arr) != tuple(shape):
        wrong(f"{what} has shape {np.shape(arr)}, but the expected shape is {tuple(shape)}."
              + (f" {hint}" if hint else ""))


def _same(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, atol=atol, rtol=rtol))


def compare(got, expected, what: str = "your answer", *, atol: float = 1e-8, rtol: float = 1e-6,
            mistakes=(), shape_hint: str = "", hint: str = "", rounding_hint: bool = True,
            mistake_prefix: str = ""):
    """Compare an answer with the reference; name a classic mistake if one matches.

    The order is: a recognised mistake first (its message), then the shape,
    then the values. A value message gives the first index that differs and
    whether the answer is too large or too small there, never the expected value.

    Parameters
    ----------
    got, expected : array_like
        The learner's answer and the reference.
    what : str
        How to name the answer in messages.
    atol, rtol : float
        Tolerances, as in :func:`numpy.isclose`.
    mistakes : sequence of (array_like or None, str)
        Results of known wrong methods and the message that names each one.
        A mistake is reported when ``got`` matches its result and that result
        differs from ``expected`` (shape or values); when two mistakes give the
        same numbers, both are named. ``None`` results are skipped.
    shape_hint : str
        Added to the message about a wrong shape.
    hint : str
        Added to the message about wrong values: where to look.
    mistake_prefix : str
        Put before a mistake's message, e.g. ``"For the batch case: "``.
    rounding_hint : bool
        Say "keep more decimals" when the answer is within a few percent
        (turn it off for exact counts).

    Examples
    --------
    >>> compare([1.0, 2.0], [1.0, 2.0])          # quiet when right
    >>> try:
    ...     compare([2.0, 1.0], [1.0, 2.0], mistakes=[([2.0, 1.0], "the order is reversed.")])
    ... except Feedback as fb:
    ...     print(fb.message)
    the order is reversed.
    """
    got = answer_array(got, what)
    expected = np.asarray(expected, dtype=float)
    found = []
    for result, message in mistakes:
        if result is None or message in found:
            continue
        try:
            result = np.asarray(result, dtype=float)
        except (TypeError, ValueError):
            continue
        if (np.isfinite(result).all() and not _same(result, expected, atol, rtol)
                and _same(got, result, atol, rtol)):
            found.append(message)
    if len(found) == 1:
        wrong(mistake_prefix + found[0])
    if found:
        wrong(f"{mistake_prefix}{found[0]} (Another slip gives the same numbers here: {found[1]})")
    expect_shape(got, expected.shape, what, shape_hint)
    close = np.isclose(got, expected, atol=atol, rtol=rtol)
    if close.all():
        return
    bad = np.argwhere(~close)
    where = tuple(int(i) for i in bad[0])
    g, e = float(got[where]), float(expected[where])
    side = "too large" if g > e else "too small"
    place = f"{what} is {side}" if expected.ndim == 0 else f"{what} differs at index {where}: your entry is {side}"
    more = f" ({len(bad)} entries differ in all)" if len(bad) > 1 else ""
    diff = np.abs(got - expected)
    near = rounding_hint and bool((diff <= np.maximum(0.05 * np.abs(expected), max(10 * atol, 5e-3))).all())
    tail = " It is close, but not within the tolerance: if you rounded, keep more decimals." if near else ""
    tail += f" {hint}" if hint else ""
    wrong(f"{place}{more}.{tail}")

