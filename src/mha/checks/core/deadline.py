"""Time limits and Ctrl-C: how a check never hangs and still lets the reader stop it.

This is the part of :mod:`mha.checks.core` that works with signals and
threads; an exercise author has no reason to edit it (messages live in
:mod:`~mha.checks.core.feedback` and :mod:`~mha.checks.core.answers`).

* :func:`within` raises :class:`TimeUp` into code that runs past its time
  limit: on the main thread through SIGALRM (``setitimer``), off it through
  a timer thread and ``ctypes.pythonapi.PyThreadState_SetAsyncExc``. Limits
  nest: an enclosing limit is paused while an inner one runs, so the
  learner's time does not count against the checker's own.
* :func:`check_session` sets the limit of one check for this thread and
  tells the reader's Ctrl-C apart from a ``KeyboardInterrupt`` that the
  learner's code raises; :func:`reader_stopped` and :func:`is_ours` say
  which exceptions a check must let through.

The names here are for the other parts of :mod:`mha.checks.core`; checkers
use :func:`~mha.checks.core.registry.call_learner` and never these.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import numbers
import signal
import threading
import time

__all__ = ["TIME_LIMIT", "TimeUp", "within", "check_session", "chosen_limit", "current_limit",
           "reader_stopped", "is_ours"]

#: Seconds the learner's code may run per call (and the checker's own work per check), unless
#: :func:`~mha.checks.core.registry.check` or :func:`~mha.checks.core.registry.call_learner` is
#: given another ``time_limit``. A constant: assigning it from outside changes nothing.
TIME_LIMIT = 3.0


class TimeUp(BaseException):
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
        raise TimeUp()


class _SignalAlarm:
    """On the main thread: SIGALRM from ``setitimer`` raises :class:`TimeUp` at the next bytecode."""

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
    """Off the main thread: a timer thread raises :class:`TimeUp` in this thread.

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
                self._raise(ctypes.py_object(TimeUp))
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
        except TimeUp:
            continue


@contextlib.contextmanager
def within(seconds):
    """Raise :class:`TimeUp` in this thread if the block runs longer than ``seconds``.

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


def current_limit() -> float:
    """The time limit of the check running in this thread; :data:`TIME_LIMIT` outside a check."""
    return getattr(_local, "limit", None) or TIME_LIMIT


def chosen_limit(time_limit, default: float) -> float:
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


def reader_stopped(err: BaseException | None = None) -> bool:
    """True when the reader pressed Ctrl-C (and ``err``, if given, is what it raised)."""
    state = getattr(_local, "ctrl_c", None)
    if state is None:
        return isinstance(err, KeyboardInterrupt)
    if state["pressed"]:
        return err is None or isinstance(err, KeyboardInterrupt)
    return isinstance(err, KeyboardInterrupt) and not state["known"]


def is_ours(err: BaseException) -> bool:
    """True for what must not be swallowed: a time-up, or the reader's Ctrl-C."""
    return isinstance(err, TimeUp) or reader_stopped(err)


@contextlib.contextmanager
def check_session(limit: float):
    """Run one check in this thread: its time limit is ``limit``, and the reader's Ctrl-C is watched.

    Inside the block, :func:`current_limit` gives ``limit`` and
    :func:`reader_stopped` knows whether the reader pressed Ctrl-C; both are
    restored afterwards, so sessions nest.
    """
    saved = (getattr(_local, "limit", None), getattr(_local, "ctrl_c", None))
    with _reader_interrupts() as ctrl_c:
        _local.limit, _local.ctrl_c = limit, ctrl_c
        try:
            yield
        finally:
            _local.limit, _local.ctrl_c = saved
