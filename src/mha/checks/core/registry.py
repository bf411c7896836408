"""Which checker answers which exercise, and running foreign code under the check's rules.

:func:`checker` registers a function under an exercise's label;
:func:`check` finds it and runs it on the learner's answer, and always
returns a :class:`~mha.checks.core.feedback.Verdict` (never raising, never
hanging, never writing to stderr). A checker calls the learner's function
only through :func:`call_learner`, which turns stubs, crashes, hangs and
changed inputs into feedback.

An exercise author uses :func:`checker` and :func:`call_learner` and need
not edit this module: the time limits and Ctrl-C handling it relies on live
in :mod:`~mha.checks.core.deadline`, the wording of verdicts in
:mod:`~mha.checks.core.feedback`.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import io
import warnings

import numpy as np

from .deadline import (MAX_TIME_LIMIT, TIME_LIMIT, TimeUp, check_session, chosen_limit, current_limit, is_ours,
                       reader_stopped, within)
from .feedback import Feedback, Verdict, describe_error, is_unfinished, learner_text, not_done, safe_repr, short, wrong

__all__ = ["checker", "labels", "checker_module", "check", "call_learner"]

# --------------------------------------------------------------------------- the registry and check()

_REGISTRY: dict = {}


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


def checker_module(label: str) -> str:
    """The name of the module that defines the checker of ``label``, e.g. ``"mha.checks.costs"``."""
    return _REGISTRY[label][0].__module__


def _unknown_label(label) -> Verdict:
    if not isinstance(label, str):
        return Verdict(safe_repr(label), "wrong",
                       "the first argument should be the exercise's label, as text, e.g. \"ex-split-heads\".")
    close = difflib.get_close_matches(label, list(_REGISTRY), n=1)
    hint = f" Did you mean \"{close[0]}\"?" if close else " Copy the label from the exercise box."
    return Verdict(short(label, 60), "wrong",
                   f"there is no exercise called \"{learner_text(label, 60)}\".{hint}")


def check(label: str, answer, *, time_limit: float | None = None) -> Verdict:
    """Check ``answer`` for the exercise ``label`` and return the verdict.

    Never raises (except for the reader's own Ctrl-C), never hangs, never
    writes to stderr and never states the expected answer.

    Parameters
    ----------
    label : str
        The exercise's label, e.g. ``"ex-split-heads"``.
    answer : object
        The learner's value or function. ``...`` and ``None`` mean "not done yet".
    time_limit : float, optional
        Seconds the learner's code may run per call, and the checker's own
        work may take; :data:`TIME_LIMIT` by default, at most
        :data:`~mha.checks.core.deadline.MAX_TIME_LIMIT` (larger values are cut to it).

    Returns
    -------
    Verdict
    """
    if not isinstance(label, str) or label not in _REGISTRY:
        return _unknown_label(label)
    limit = chosen_limit(time_limit, TIME_LIMIT)
    with check_session(limit):
        verdict = _run(label, _REGISTRY[label][0], answer, limit)
        if reader_stopped():  # a Ctrl-C that the learner's code swallowed
            raise KeyboardInterrupt
    return verdict


def _run(label: str, func, answer, limit: float) -> Verdict:
    """Run one checker under the time limit; every outcome becomes a verdict."""
    try:
        with _quiet(), within(limit):
            try:
                if is_unfinished(answer):
                    not_done()
                message = func(answer)
                text = short(message, 600) if isinstance(message, str) and message else "well done."
            except (Feedback, TimeUp):
                raise
            except BaseException as err:  # a checker must survive any answer
                if reader_stopped(err):
                    raise
                wrong(f"your answer could not be checked ({describe_error(err)}). "
                      "Look at its type and shape.")
    except Feedback as fb:
        # Only a checker says "correct": feedback raised with another state is a wrong answer.
        status = fb.status if fb.status in ("wrong", "not done") else "wrong"
        message = fb.message if isinstance(fb.message, str) else "your answer is not right yet."
        return Verdict(label, status, short(message, 600))
    except TimeUp:
        capped = " (the longest time limit a check allows)" if limit == MAX_TIME_LIMIT else ""
        return Verdict(label, "wrong", f"checking your answer took more than {limit:g} s{capped}. Something in it "
                                       "never finishes: look for a loop that never ends.")
    return Verdict(label, "correct", text)


@contextlib.contextmanager
def _quiet():
    """Silence warnings, NumPy floating-point reports and stray writes to stderr."""
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield




# --------------------------------------------------------------------------- the learner's function

def _param_names(func, n: int) -> list:
    """Names of the first ``n`` positional parameters of ``func``, for messages."""
    try:
        params = [p.name for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except BaseException as err:
        if is_ours(err):
            raise
        params = []
    return [params[i] if i < len(params) else f"argument {i + 1}" for i in range(n)]


def call_learner(func, *args, name: str = "your function", case: str = "", signature: str = "",
                 hint: str = "", time_limit: float | None = None, **kwargs):
    """Call the learner's function on copies of its inputs; turn stubs, crashes and hangs into feedback.

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
    time_limit : float, optional
        Seconds the call may take; by default the running check's limit.

    Returns
    -------
    object
        What the function returned (never ``None``).

    Notes
    -----
    The call may take the check's time limit (:data:`TIME_LIMIT` unless
    :func:`check` or this call was given another); past it the function is
    stopped and the message says so. Anything it raises becomes feedback,
    ``BaseException`` subclasses (``GeneratorExit``, ``SystemExit``,
    ``KeyboardInterrupt``) included; only the reader's own Ctrl-C goes through.
    """
    if is_unfinished(func):
        not_done()
    if not callable(func):
        wrong(f"expected a function, got a {type(func).__name__}. Pass the function itself, "
              f"without calling it: write `{name}`, not `{name}(...)`.")
    originals = [np.array(a, copy=True) if isinstance(a, np.ndarray) else None for a in args]
    given = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    where = f" for {case}" if case else ""
    limit = chosen_limit(time_limit, current_limit())
    try:
        with within(limit):
            result = func(*given, **kwargs)
    except TimeUp:
        wrong(f"`{name}` ran for more than {limit:g} s{where}; look for a loop that never ends.")
    except NotImplementedError:
        not_done(f"`{name}` still raises NotImplementedError: write its body, then run the cell again.")
    except BaseException as err:
        if reader_stopped(err):
            raise
        described = describe_error(err)
        if signature and isinstance(err, TypeError) and "argument" in described:
            look = f"The exercise calls it as `{signature}`."
        else:
            look = hint or "Run it on a small input and print the shapes step by step."
        wrong(f"`{name}` raised {described}{where}. {look}")
    if reader_stopped():
        raise KeyboardInterrupt
    names = _param_names(func, len(args))
    for arg_name, before, after in zip(names, originals, given):
        if before is not None and not (before.shape == after.shape
                                       and np.array_equal(before, after, equal_nan=True)):
            wrong(f"`{name}` changed its input `{learner_text(arg_name, 40)}` in place{where}. Work on new "
                  "arrays (for example `x = x - m`, not `x -= m`), so the caller's data stays as it was.")
    if result is None:
        not_done(f"`{name}` returns None: end it with a `return` of the result.")
    if is_unfinished(result):
        not_done(f"`{name}` returns `...`: make it return the result.")
    return result
