"""The machinery behind every "Try it" check.

A checker is a function registered under an exercise's label with
:func:`checker`. It receives the learner's answer and either returns quietly
(correct, optionally with a short message) or stops with :func:`wrong` or
:func:`not_done`. :func:`check` runs it and always returns a :class:`Verdict`
with one of three states: "correct", "not done" or "wrong".

Promises that every checker relies on:

* :func:`check` never raises and never writes to stderr, whatever the answer
  is (``None``, ``...``, text, lists, NaN, complex numbers, objects, a function
  that raises anything at all, even a ``BaseException`` such as
  ``GeneratorExit``, or returns nonsense). NumPy and Python warnings are
  silenced during a check. The one exception is a real Ctrl-C of the reader,
  which stops the check as it stops any cell.
* :func:`check` never hangs: the learner's code gets :data:`TIME_LIMIT`
  seconds per call, and the checker's own work on the answer gets as long.
* No message states the expected answer. Messages say *where* an answer is
  wrong (its shape, the first entry that differs, named in words when the
  checker knows the entries' names, whether it is too large or too small),
  say when an answer is right up to rounding, and name a recognised mistake,
  never the value that was expected.
* Text that comes from the learner (reprs of answers, exception messages) is
  escaped in the verdict's HTML, and its backticks never turn into code.

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
import ctypes
import difflib
import html
import inspect
import io
import math
import numbers
import signal
import threading
import time
import warnings
from dataclasses import dataclass

import numpy as np

__all__ = [
    "TIME_LIMIT", "Feedback", "Verdict", "check", "checker", "labels", "wrong", "not_done",
    "call_learner", "answer_array", "expect_shape", "compare", "is_unfinished", "safe_repr",
    "entry_names", "dict_parts", "pair", "one_number", "near_threshold", "checker_module", "rounding_of",
]

#: Seconds the learner's code may run per call (and the checker's own work per check), unless
#: :func:`check` or :func:`call_learner` is given another ``time_limit``. A constant: assigning it
#: from outside changes nothing.
TIME_LIMIT = 3.0

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


# --------------------------------------------------------------------------- time limits and Ctrl-C

class _TimeUp(BaseException):
    """Raised into code that ran past its time limit.

    A ``BaseException``, so that a learner's ``except Exception`` cannot swallow it.
    """


_local = threading.local()  # per thread: the alarm stack, the time limit, the Ctrl-C state
_REPEAT = 0.1  # an alarm fires again this often, in case the learner's code swallowed it


def _alarms() -> list:
    if not hasattr(_local, "alarms"):
        _local.alarms = []
    return _local.alarms


def _on_alarm(signum, frame):
    alarms = _alarms()
    if alarms and alarms[-1].active:
        raise _TimeUp()


class _SignalAlarm:
    """On the main thread: SIGALRM from ``setitimer`` raises :class:`_TimeUp` at the next bytecode."""

    def __init__(self):
        self.active, self.end = False, 0.0
        self.handler = self.timer = None

    def install(self):
        self.handler = signal.signal(signal.SIGALRM, _on_alarm)
        self.timer = signal.setitimer(signal.ITIMER_REAL, 0)  # someone else's timer, kept for later
        self.started = time.monotonic()

    def arm(self, seconds):
        self.end = time.monotonic() + seconds
        self.active = True
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3), _REPEAT)

    def disarm(self):
        self.active = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    def uninstall(self):
        signal.signal(signal.SIGALRM, self.handler)
        left, interval = self.timer
        if left > 0:
            elapsed = time.monotonic() - self.started
            signal.setitimer(signal.ITIMER_REAL, max(left - elapsed, 1e-3), interval)


class _ThreadAlarm:
    """Off the main thread: a timer thread raises :class:`_TimeUp` in this thread.

    ``PyThreadState_SetAsyncExc`` interrupts Python code only; a long call into
    C (a huge matrix product, ``time.sleep``) finishes first.
    """

    def __init__(self):
        self.active, self.end = False, 0.0
        self.thread = threading.get_ident()
        self.lock = threading.Lock()
        self.timer = None

    def install(self):
        pass

    def _raise(self, exc):
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread), exc)

    def _fire(self):
        with self.lock:
            if self.active:
                self._raise(ctypes.py_object(_TimeUp))
                self._start(_REPEAT)

    def _start(self, seconds):
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True
        self.timer.start()

    def arm(self, seconds):
        self.end = time.monotonic() + seconds
        self.active = True
        self._start(seconds)

    def disarm(self):
        self.active = False
        with self.lock:
            if self.timer is not None:
                self.timer.cancel()
            self._raise(ctypes.c_void_p(0))  # drop an alarm that is pending but not yet raised

    def uninstall(self):
        pass


def _new_alarm():
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        return _SignalAlarm()
    if hasattr(ctypes, "pythonapi") and hasattr(ctypes.pythonapi, "PyThreadState_SetAsyncExc"):
        return _ThreadAlarm()
    return None


def _stop(alarm):
    """Disarm ``alarm``, even if a late alarm lands while doing so (it is then ignored)."""
    while True:
        try:
            alarm.disarm()
            return
        except _TimeUp:
            continue


@contextlib.contextmanager
def _deadline(seconds):
    """Raise :class:`_TimeUp` in this thread if the block runs longer than ``seconds``.

    An enclosing deadline is paused while the block runs: the learner's time
    does not count against the checker's own.
    """
    alarm = _new_alarm() if seconds and math.isfinite(seconds) else None
    if alarm is None:
        yield
        return
    alarms = _alarms()
    outer = alarms[-1] if alarms else None
    if outer is not None:
        _stop(outer)
    outer_left = outer.end - time.monotonic() if outer is not None else 0.0
    alarm.install()
    alarms.append(alarm)
    try:
        alarm.arm(seconds)
        yield
    finally:
        _stop(alarm)
        alarms.pop()
        alarm.uninstall()
        if outer is not None:
            outer.arm(max(outer_left, 1e-3))


def _time_limit() -> float:
    return getattr(_local, "limit", None) or TIME_LIMIT


def _chosen_limit(time_limit, default: float) -> float:
    """``time_limit`` as a float when it is a positive number, else ``default``.

    Odd values (zero, negative, NaN, text, ``True``) are refused quietly: a
    check never raises.
    """
    if isinstance(time_limit, numbers.Real) and not isinstance(time_limit, bool) and time_limit > 0:
        return float(time_limit)
    return default


@contextlib.contextmanager
def _reader_interrupts():
    """Tell the reader's Ctrl-C apart from a ``KeyboardInterrupt`` that learner code raises.

    A learner's function may ``raise KeyboardInterrupt`` (or any other
    ``BaseException``); that is a wrong answer and must become a verdict. But
    a reader who presses Ctrl-C (or "interrupt the kernel") wants the cell to
    stop, and a check should not stand in the way. On the main thread, while
    a check runs, SIGINT goes to a handler that notes the press before it
    raises ``KeyboardInterrupt``; only a noted press is let through. Where that
    handler cannot be installed (someone else handles SIGINT), every
    ``KeyboardInterrupt`` is let through, on the side of letting the reader
    stop. Off the main thread no signal arrives, so every one is the code's.
    """
    state = {"pressed": False, "known": False}
    main = threading.current_thread() is threading.main_thread()
    if not main:
        state["known"] = True
        yield state
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield state
        return

    def on_ctrl_c(signum, frame):
        state["pressed"] = True
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_ctrl_c)
    state["known"] = True
    try:
        yield state
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _reader_stopped(err: BaseException | None = None) -> bool:
    """True when the reader pressed Ctrl-C (and ``err``, if given, is what it raised)."""
    state = getattr(_local, "ctrl_c", None)
    if state is None:
        return isinstance(err, KeyboardInterrupt)
    if state["pressed"]:
        return err is None or isinstance(err, KeyboardInterrupt)
    return isinstance(err, KeyboardInterrupt) and not state["known"]


def _ours(err: BaseException) -> bool:
    """True for what must not be swallowed: a time-up, or the reader's Ctrl-C."""
    return isinstance(err, _TimeUp) or _reader_stopped(err)


# --------------------------------------------------------------------------- text

def _short(text, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters, so that no message floods the page."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _learner_text(text: str, limit: int) -> str:
    """Learner-supplied ``text``, shortened, with its backticks made plain quotes.

    A verdict's HTML shows `backticked` parts of a message as code; a backtick
    in the learner's own text must not start or end such a part.
    """
    return _short(str(text).replace("`", "'"), limit)


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
        return _learner_text(repr(value), limit)
    except BaseException as err:
        if _ours(err):
            raise
    try:
        return f"<a {type(value).__name__}>"
    except BaseException as err:
        if _ours(err):
            raise
        return "<an object>"


def _describe_error(err: BaseException) -> str:
    """``"ValueError: message"`` for an exception, never raising."""
    try:
        text = _learner_text(err, 200)
    except BaseException as inner:
        if _ours(inner):
            raise
        text = ""
    name = _learner_text(type(err).__name__, 60)
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


# --------------------------------------------------------------------------- verdicts and registry

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
    return Verdict(_short(label, 60), "wrong",
                   f"there is no exercise called \"{_learner_text(label, 60)}\".{hint}")


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
        work may take; :data:`TIME_LIMIT` by default.

    Returns
    -------
    Verdict
    """
    if not isinstance(label, str) or label not in _REGISTRY:
        return _unknown_label(label)
    limit = _chosen_limit(time_limit, TIME_LIMIT)
    saved = (getattr(_local, "limit", None), getattr(_local, "ctrl_c", None))
    with _reader_interrupts() as ctrl_c:
        _local.limit, _local.ctrl_c = limit, ctrl_c
        try:
            verdict = _run(label, _REGISTRY[label][0], answer, limit)
            if _reader_stopped():  # a Ctrl-C that the learner's code swallowed
                raise KeyboardInterrupt
        finally:
            _local.limit, _local.ctrl_c = saved
    return verdict


def _run(label: str, func, answer, limit: float) -> Verdict:
    """Run one checker under the time limit; every outcome becomes a verdict."""
    try:
        with _quiet(), _deadline(limit):
            try:
                if is_unfinished(answer):
                    not_done()
                message = func(answer)
                text = _short(message, 600) if isinstance(message, str) and message else "well done."
            except (Feedback, _TimeUp):
                raise
            except BaseException as err:  # a checker must survive any answer
                if _reader_stopped(err):
                    raise
                wrong(f"your answer could not be checked ({_describe_error(err)}). "
                      "Look at its type and shape.")
    except Feedback as fb:
        # Only a checker says "correct": feedback raised with another state is a wrong answer.
        status = fb.status if fb.status in ("wrong", "not done") else "wrong"
        message = fb.message if isinstance(fb.message, str) else "your answer is not right yet."
        return Verdict(label, status, _short(message, 600))
    except _TimeUp:
        return Verdict(label, "wrong", f"checking your answer took more than {limit:g} s. Something in it "
                                       "never finishes: look for a loop that never ends.")
    return Verdict(label, "correct", text)


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
        items = value[:10_000]
    elif isinstance(value, dict):
        items = list(dict.values(value))[:10_000]
    elif isinstance(value, np.ndarray) and value.dtype == object:
        items = value.ravel()[:10_000].tolist()
    else:
        return False
    return any(_holds_ellipsis(item, depth + 1) for item in items)


# --------------------------------------------------------------------------- the learner's function

def _param_names(func, n: int) -> list:
    """Names of the first ``n`` positional parameters of ``func``, for messages."""
    try:
        params = [p.name for p in inspect.signature(func).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except BaseException as err:
        if _ours(err):
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
    limit = _chosen_limit(time_limit, _time_limit())
    try:
        with _deadline(limit):
            result = func(*given, **kwargs)
    except _TimeUp:
        wrong(f"`{name}` ran for more than {limit:g} s{where}; look for a loop that never ends.")
    except NotImplementedError:
        not_done(f"`{name}` still raises NotImplementedError: write its body, then run the cell again.")
    except BaseException as err:
        if _reader_stopped(err):
            raise
        described = _describe_error(err)
        if signature and isinstance(err, TypeError) and "argument" in described:
            look = f"The exercise calls it as `{signature}`."
        else:
            look = hint or "Run it on a small input and print the shapes step by step."
        wrong(f"`{name}` raised {described}{where}. {look}")
    if _reader_stopped():
        raise KeyboardInterrupt
    names = _param_names(func, len(args))
    for arg_name, before, after in zip(names, originals, given):
        if before is not None and not (before.shape == after.shape
                                       and np.array_equal(before, after, equal_nan=True)):
            wrong(f"`{name}` changed its input `{_learner_text(arg_name, 40)}` in place{where}. Work on new "
                  "arrays (for example `x = x - m`, not `x -= m`), so the caller's data stays as it was.")
    if result is None:
        not_done(f"`{name}` returns None: end it with a `return` of the result.")
    if is_unfinished(result):
        not_done(f"`{name}` returns `...`: make it return the result.")
    return result


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
    if isinstance(value, (str, bytes, dict, set, frozenset)) or not hasattr(value, "__len__") \
            or not hasattr(value, "__getitem__") or (isinstance(value, np.ndarray) and value.ndim == 0):
        wrong(f"{what} should be a pair {example}: two values in a tuple, a list or an array; "
              f"got {safe_repr(value, 40)}.")
    if len(value) != 2:
        wrong(f"{what} should be a pair {example}: two values, got {len(value)}.")
    first, second = value[0], value[1]
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
