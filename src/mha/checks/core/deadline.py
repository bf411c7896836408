"""Time limits and Ctrl-C: how a check never hangs and still lets the reader stop it.

This is the part of :mod:`mha.checks.core` that works with signals and
threads; an exercise author has no reason to edit it (messages live in
:mod:`~mha.checks.core.feedback` and :mod:`~mha.checks.core.answers`).

* :func:`within` raises :class:`TimeUp` into code that runs past its time
  limit: on the main thread through SIGALRM (``setitimer``), off it through
  a timer thread and ``ctypes.pythonapi.PyThreadState_SetAsyncExc``. On the
  main thread, once the limit has passed, every line the learner's code runs
  raises it again (a trace function, :func:`_escalate`), so a bare
  ``except:`` in a loop cannot swallow it for good. Limits
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
import functools
import math
import numbers
import signal
import sys
import threading
import time

__all__ = ["MAX_TIME_LIMIT", "TIME_LIMIT", "TimeUp", "within", "check_session", "chosen_limit", "current_limit",
           "reader_stopped", "is_ours"]

#: Seconds the learner's code may run per call (and the checker's own work per check), unless
#: :func:`~mha.checks.core.registry.check` or :func:`~mha.checks.core.registry.call_learner` is
#: given another ``time_limit``. A constant: assigning it from outside changes nothing.
TIME_LIMIT = 3.0

#: The longest time limit a check accepts, in seconds; a larger ``time_limit`` (``1e308``,
#: ``10**400``, ``inf``) is cut to it, so that a check still ends.
MAX_TIME_LIMIT = 3600.0


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
        _escalate(alarms[-1], frame)
        raise TimeUp()


# ---- the escalation: once the limit has passed, every line of the learner's code raises TimeUp again
_OURS = ("mha.checks.core", "contextlib")  # frames that must finish their cleanup undisturbed


def _is_ours(frame) -> bool:
    return str(frame.f_globals.get("__name__", "")).startswith(_OURS)


def _tracer(frame, event, arg):
    """While an expired alarm is active, raise :class:`TimeUp` at every line and call of code that is not ours.

    CPython switches a trace function off when it raises, so each raise first
    asks for :func:`_trace_again` to run at the next point where the
    interpreter handles pending work: tracing is back on before the learner's
    ``except`` block has run its first line.
    """
    if event not in ("line", "call"):
        return _tracer
    alarms = _alarms()
    if not (alarms and alarms[-1].active and alarms[-1].expired) or _is_ours(frame):
        return None
    _SCHEDULE == None  # noqa: B015, E711 - asks for _trace_again, by a C call (see _SCHEDULE)
    raise TimeUp  # the class, not TimeUp(): no call here at which the scheduled work could run


def _trace_again(_):
    """Turn the trace function back on, and trace the learner's frames again (a C callback: never raises)."""
    try:
        alarms = _alarms()
        if alarms and alarms[-1].active and alarms[-1].expired:
            _trace_frames(sys._getframe(1))
    except BaseException:  # noqa: BLE001 - a time-up landing here is simply dropped: the next line raises again
        pass
    return 0


def _trace_frames(frame):
    """Trace this thread from now on, and the frames from ``frame`` up to the nearest of ours."""
    sys.settrace(_tracer)
    while frame is not None and not _is_ours(frame):
        frame.f_trace = _tracer
        frame.f_trace_lines = True
        frame = frame.f_back


_TRACE_AGAIN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(_trace_again)  # kept alive here
_ADD_PENDING_CALL = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
    ("Py_AddPendingCall", ctypes.pythonapi))
#: ``_SCHEDULE == None`` runs ``Py_AddPendingCall(_trace_again, NULL)``. A comparison, not a call: its
#: ``__eq__`` is C code (a ``functools.partial`` of the C function), so no Python frame starts and the
#: interpreter reaches no point where it runs pending work. :func:`_trace_again` therefore runs in the
#: learner's code after the raise, not in :func:`_tracer` before it (where it would be undone at once).
_SCHEDULE = type("_Schedule", (), {"__eq__": functools.partial(_ADD_PENDING_CALL, ctypes.cast(_TRACE_AGAIN, ctypes.c_void_p)),
                                   "__hash__": None})()


def _escalate(alarm, frame):
    """Trace the learner's frames (those above the nearest of ours) and every frame they call."""
    if alarm.expired and sys.gettrace() is _tracer:
        return
    if not alarm.expired:  # the first time: keep what to restore
        alarm.expired = True
        alarm.saved_trace = sys.gettrace()
    _trace_frames(frame)  # again if CPython switched it off (a trace function that failed)


def _deliver():
    """Nothing: calling it lets a scheduled exception land here."""


def _calm(alarm):
    """Undo :func:`_escalate`: the trace function that was there before."""
    if getattr(alarm, "expired", False):
        alarm.expired = False
        sys.settrace(alarm.saved_trace)


class _SignalAlarm:
    """On the main thread: SIGALRM from ``setitimer`` raises :class:`TimeUp` at the next bytecode."""

    def __init__(self):
        self.active, self.end, self.expired = False, 0.0, False
        self.handler = self.timer = self.saved_trace = None

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
        _calm(self)

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
        self.active, self.end, self.expired = False, 0.0, False
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
        # A TimeUp the timer scheduled but this thread has not raised yet lands in this call, and _stop catches
        # it. (Clearing it through the C API instead leaves CPython's "something is pending" flag set for good.)
        _deliver()

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
    """``time_limit`` as a float when it is a positive number, at most :data:`MAX_TIME_LIMIT`; else ``default``.

    Odd values (zero, negative, NaN, text, ``True``) are refused quietly: a
    check never raises. Larger values, infinity and integers too large for a
    float included, are cut to :data:`MAX_TIME_LIMIT` (the time-up message says so).
    """
    if isinstance(time_limit, numbers.Real) and not isinstance(time_limit, bool):
        try:
            if time_limit > MAX_TIME_LIMIT:
                return MAX_TIME_LIMIT
            if time_limit > 0:
                return float(time_limit)
        except (TypeError, ValueError, OverflowError):  # an odd Real subclass
            return default
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
