"""Reading a learner's answer and comparing it with the reference, with messages that help.

The part of :mod:`mha.checks.core` that exercise authors call most and edit
most: every message about a wrong answer's type, shape or values is worded
here. :func:`answer_array`, :func:`one_number`, :func:`pair` and
:func:`dict_parts` read an answer or stop with feedback; :func:`compare`
says whether it is right, right up to rounding, a recognised mistake, the
wrong shape, or wrong at a named entry (:func:`entry_names`) and on which
side, never stating the expected value.

Nothing here deals with time limits or signals: a check's time limit covers
these functions from the outside (:mod:`~mha.checks.core.deadline`).
"""

from __future__ import annotations

import numbers

import numpy as np

from .feedback import Feedback, is_unfinished, not_done, safe_repr, wrong  # Feedback: in the examples

__all__ = ["entry_names", "answer_array", "one_number", "pair", "dict_parts", "expect_shape",
           "rounding_of", "compare"]


# --------------------------------------------------------------------------- reading answers

def entry_names(*axes, start: int = 0, template: str = ""):
    """A function that names an entry of an array by its index, for messages.

    Parameters
    ----------
    *axes : str, sequence of str, or (str, sequence of str)
        One per axis. A noun such as ``"head"`` names index i as ``"head i"``
        (counting from ``start``); a sequence of names such as
        ``("I", "love", "LLMs")`` names it ``"'love'"``; a pair
        ``("query", names)`` names it ``"query 'love'"``.
    start : int
        The number of the first index for noun axes (1 when the page counts from 1).
    template : str
        How to put the axes' words together, with one ``{}`` per axis;
        by default they are joined by commas.

    Returns
    -------
    callable
        ``name(index) -> str``, or ``None`` when the index does not fit the axes.

    Examples
    --------
    >>> tokens = ("I", "love", "LLMs")
    >>> entry_names(tokens, template="the weight on {}")((0,))
    "the weight on 'I'"
    >>> entry_names("head", ("query", tokens), ("key", tokens))((1, 2, 0))
    "head 1, query 'LLMs', key 'I'"
    >>> entry_names(tokens)((3,)) is None
    True
    """
    def word(axis, i):
        if isinstance(axis, str):
            return f"{axis} {i + start}"
        noun, names = axis if len(axis) == 2 and isinstance(axis[0], str) and not isinstance(axis[1], str) \
            else ("", axis)
        if not 0 <= i < len(names):
            return None
        return f"{noun} '{names[i]}'".strip()

    def name(index):
        if len(index) != len(axes):
            return None
        words = [word(axis, int(i)) for axis, i in zip(axes, index)]
        if any(w is None for w in words):
            return None
        return template.format(*words) if template else ", ".join(words)

    return name


def _where(index, entry) -> str:
    """``"the weight on 'I'"`` when ``entry`` can name ``index``, else ``"index (0,)"``."""
    named = entry(index) if entry is not None else None
    return named if named else f"index {index}"


def answer_array(value, what: str = "your answer", *, entry=None) -> np.ndarray:
    """Read ``value`` (a number, list, tuple or array) as a float array, or give feedback.

    Text, yes/no values, complex numbers, masked arrays, ragged lists, objects,
    NaN and infinity each get a message. ``entry`` (see :func:`entry_names`)
    names the entry that holds a NaN or an infinity.

    Examples
    --------
    >>> answer_array([1, 2]).tolist()
    [1.0, 2.0]
    >>> try:
    ...     answer_array(1 + 2j)
    ... except Feedback as fb:
    ...     print(fb.message[:33])
    your answer holds complex numbers
    """
    if is_unfinished(value):
        not_done()
    if isinstance(value, (str, bytes)):
        wrong(f"{what} is text ({safe_repr(value, 40)}); it should be numbers, without quotes.")
    if isinstance(value, (bool, np.bool_)):
        wrong(f"{what} is {value}, a yes/no value; it should be a number.")
    if np.ma.isMaskedArray(value):
        wrong(f"{what} is a masked array, whose mask would be lost here. Give plain numbers, "
              "for example with `.filled(0.0)`.")
    try:
        raw = np.asarray(value)
    except Exception:
        raw = None
    if raw is None or raw.dtype.kind not in "biufcOUS":
        wrong(f"{what} could not be read as numbers (got a {type(value).__name__}). "
              "Check for ragged rows, text or other objects among the numbers.")
    items = raw.ravel().tolist() if raw.dtype.kind == "O" else []
    if raw.dtype.kind in "US" or any(isinstance(x, (str, bytes)) for x in items):
        wrong(f"{what} holds text ({safe_repr(value, 40)}); it should be numbers, without quotes.")
    if raw.dtype.kind == "b" or any(isinstance(x, (bool, np.bool_)) for x in items):
        wrong(f"{what} holds yes/no values ({safe_repr(value, 40)}); it should be numbers.")
    if raw.dtype.kind == "c" or any(isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real)
                                    for x in items):
        wrong(f"{what} holds complex numbers ({safe_repr(value, 40)}); it should be real numbers. "
              "A complex number often comes from the square root or the log of a negative number; "
              "if every imaginary part is 0, take `.real`.")
    try:
        arr = raw.astype(float)
    except Exception:
        wrong(f"{what} could not be read as numbers (got a {type(value).__name__}). "
              "Check for ragged rows, text or other objects among the numbers.")
    if np.isnan(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isnan(arr))[0])
        wrong(f"{what} contains NaN at {_where(where, entry)}. NaN often comes from 0/0, from 0 times "
              "infinity, or from exp of a huge number: print the intermediate results to find where it "
              "first appears.")
    if np.isinf(arr).any():
        where = tuple(int(i) for i in np.argwhere(np.isinf(arr))[0])
        wrong(f"{what} contains infinity at {_where(where, entry)}. An exp that overflowed? Subtract the row "
              "maximum before exp.")
    return arr


def one_number(value, what: str = "your answer") -> float:
    """Read ``value`` as one real number, or give feedback (an array of several is refused)."""
    arr = answer_array(value, what)
    if arr.shape != ():
        wrong(f"{what} should be one number, got an array of shape {arr.shape}.")
    return float(arr)


def pair(value, what: str = "your answer", example: str = "(first, second)"):
    """The two parts of ``value``: any tuple, list, sequence or array of length 2, or give feedback.

    Examples
    --------
    >>> pair(np.array([3, 4]))
    (3, 4)
    """
    if is_unfinished(value):
        not_done()
    if isinstance(value, (str, bytes, dict, set, frozenset, type)) or not hasattr(value, "__len__") \
            or not hasattr(value, "__getitem__") or (isinstance(value, np.ndarray) and value.ndim == 0):
        kind = f"the type {value.__name__} itself" if isinstance(value, type) else safe_repr(value, 40)
        wrong(f"{what} should be a pair {example}: two values in a tuple, a list or an array; got {kind}.")
    try:
        n = len(value)
        first, second = (value[0], value[1]) if n == 2 else (None, None)
    except Exception as err:  # an object whose len() or indexing fails
        wrong(f"{what} should be a pair {example}: two values in a tuple, a list or an array; got a "
              f"{type(value).__name__} whose parts could not be read ({type(err).__name__}).")
    if n != 2:
        wrong(f"{what} should be a pair {example}: two values, got {n}.")
    if isinstance(value, np.ndarray) and value.ndim == 1:
        first, second = first.item(), second.item()
    if is_unfinished(first) or is_unfinished(second):
        not_done()
    return first, second


def dict_parts(answer, keys, example: str) -> list:
    """The values of the dict ``answer`` for ``keys``, or give feedback.

    ``example`` shows the expected dict in messages. A part still at ``...``
    or ``None`` means "not done".
    """
    if not isinstance(answer, dict):
        wrong(f"give a dict with the keys {', '.join(map(repr, keys))}, like {example}; "
              f"got a {type(answer).__name__}.")
    missing = [k for k in keys if not dict.__contains__(answer, k)]
    if missing:
        wrong(f"your dict has no {', '.join(map(repr, missing))} key. It needs {', '.join(map(repr, keys))}.")
    values = [dict.__getitem__(answer, k) for k in keys]
    if any(is_unfinished(v) for v in values):
        not_done("fill in every part of the dict: some are still ... or None.")
    return values


def expect_shape(arr: np.ndarray, shape: tuple, what: str = "your answer", hint: str = ""):
    """Give feedback unless ``arr`` has exactly ``shape`` (the expected shape is named)."""
    if np.shape(arr) != tuple(shape):
        wrong(f"{what} has shape {np.shape(arr)}, but the expected shape is {tuple(shape)}."
              + (f" {hint}" if hint else ""))


# --------------------------------------------------------------------------- comparing

def _same(a: np.ndarray, b: np.ndarray, atol: float, rtol: float) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, atol=atol, rtol=rtol))


def _round_sig(x: np.ndarray, figures: int) -> np.ndarray:
    """``x`` rounded to ``figures`` significant figures."""
    scale = np.where(x == 0, 1.0, 10.0 ** (figures - 1 - np.floor(np.log10(np.abs(np.where(x == 0, 1.0, x))))))
    return np.round(x * scale) / scale


def rounding_of(got: np.ndarray, expected: np.ndarray, atol: float, rtol: float) -> str:
    """How ``expected`` was rounded to give ``got`` (e.g. ``"1 decimal"``), or ``""``.

    Checkers that name a mistake before calling :func:`compare` ask this
    first: an answer that is right up to rounding is not a mistake.

    Every entry must be within the tolerance or equal to the expected entry
    rounded to some decimals (1 to 6) or significant figures (2 to 6).
    """
    if got.shape != expected.shape or got.size == 0:
        return ""
    close = np.isclose(got, expected, atol=atol, rtol=rtol)
    coarsest = ""
    for i in np.argwhere(~close):
        g, e = float(got[tuple(i)]), float(expected[tuple(i)])
        options = [(f"{n} decimal{'s' if n > 1 else ''}", float(np.round(e, n))) for n in range(1, 7)]
        options += [(f"{n} significant figures", float(_round_sig(np.array(e), n))) for n in range(2, 7)]
        found = next((text for text, r in options if r != e and abs(g - r) <= 1e-9 * max(1.0, abs(r))), "")
        if not found:
            return ""
        coarsest = coarsest or found
    return coarsest


def _decimals_needed(expected: np.ndarray, atol: float, rtol: float) -> int:
    return next((n for n in range(13) if np.allclose(np.round(expected, n), expected, atol=atol, rtol=rtol)), 12)


def compare(got, expected, what: str = "your answer", *, atol: float = 1e-8, rtol: float = 1e-6,
            mistakes=(), shape_hint: str = "", hint: str = "", rounding_hint: bool = True,
            mistake_prefix: str = "", entry=None):
    """Compare an answer with the reference; name a classic mistake if one matches.

    The order is: right within the tolerance (quiet); right up to rounding
    (say how many decimals to keep); a recognised mistake (its message); the
    shape; then the values. A value message names the first entry that
    differs and whether the answer is too large or too small there, never the
    expected value.

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
    rounding_hint : bool
        Say "keep more decimals" when the answer is within a few percent
        (turn it off for exact counts).
    mistake_prefix : str
        Put before a mistake's message, e.g. ``"For the batch case: "``.
    entry : callable, optional
        Names an entry by its index (see :func:`entry_names`), so that a
        message says "the weight on 'I'" rather than "index (0,)".

    Examples
    --------
    >>> compare([1.0, 2.0], [1.0, 2.0])          # quiet when right
    >>> try:
    ...     compare([2.0, 1.0], [1.0, 2.0], mistakes=[([2.0, 1.0], "the order is reversed.")])
    ... except Feedback as fb:
    ...     print(fb.message)
    the order is reversed.
    >>> try:
    ...     compare([0.3, 0.4], [0.317, 0.367], atol=0.006, entry=entry_names(("I", "love")))
    ... except Feedback as fb:
    ...     print(fb.message)
    your answer is the right one rounded to 1 decimal, which is not precise enough here: keep at least 2 decimals.
    """
    got = answer_array(got, what, entry=entry)
    expected = np.asarray(expected, dtype=float)
    if _same(got, expected, atol, rtol):
        return
    rounded = rounding_of(got, expected, atol, rtol)
    if rounded:
        needed = _decimals_needed(expected, atol, rtol)
        keep = f"keep at least {needed} decimal{'s' if needed > 1 else ''}" if needed else \
            "give it exactly, without rounding"
        wrong(f"{mistake_prefix}{what} is the right one rounded to {rounded}, which is not precise "
              f"enough here: {keep}.")
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
    bad = np.argwhere(~close)
    where = tuple(int(i) for i in bad[0])
    g, e = float(got[where]), float(expected[where])
    side = "too large" if g > e else "too small"
    named = entry(where) if entry is not None and expected.ndim else None
    if expected.ndim == 0:
        place = f"{what} is {side}"
    elif named:
        place = f"in {what}, {named} is {side}"
    else:
        place = f"{what} differs at index {where}: your entry is {side}"
    more = f" ({len(bad)} entries differ in all)" if len(bad) > 1 else ""
    diff = np.abs(got - expected)
    near = rounding_hint and bool((diff <= np.maximum(0.05 * np.abs(expected), max(10 * atol, 5e-3))).all())
    tail = " It is close, but not within the tolerance: if you rounded, keep more decimals." if near else ""
    tail += f" {hint}" if hint else ""
    wrong(f"{place}{more}.{tail}")
