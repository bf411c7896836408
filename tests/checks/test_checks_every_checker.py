"""Promises that every registered checker keeps, whatever the learner gives it.

* junk of every kind gets a verdict, never an exception, and no output on stderr;
* learner code that raises any ``BaseException`` (``GeneratorExit``,
  ``KeyboardInterrupt``, ``SystemExit``, a class of its own) gets a verdict,
  while a real Ctrl-C still stops the check;
* learner code (or an answer object) that never finishes is stopped after the
  time limit, on the main thread and off it, and the verdict says so;
* complex numbers are refused, rounding is recognised before a mistake,
  entries of token rows are named in words, near a threshold enough decimals
  are printed, a pair may be any sequence or array of two;
* the verdict's HTML never shows learner-supplied text unescaped.

The time limit is kept short here (``check(..., time_limit=...)``) so the suite stays fast.
"""

from __future__ import annotations

import re
import signal
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mha
from mha.checks import check, labels
from mha.checks import costs, costs_measured
from mha.checks.narrow_heads import weights_for_q
from mha.checks.removing_heads import zero_and_mean
from mha.checks.splitting import head_writes, shapes_512
from mha.checks.why_heads import COMPROMISE_COUNTS, COMPROMISE_TARGETS, blend_outputs, compromise_reference
from mha.checks.wide_or_narrow import role_partner
from mha.fitting import best_single_row
from _verdicts import wrong as _wrong

LABELS = sorted(labels())
CODE_LABELS = sorted(label for label, kind in labels().items() if kind == "code")
SHORT = 0.05  # seconds: the time limit in the properties
LIMIT = 0.3   # seconds: the time limit where a test reads the message


# ----------------------------------------------------------------------------- junk answers

class Hostile:
    """An answer whose every conversion raises ``error``."""

    def __init__(self, error):
        self.error = error

    def _raise(self, *args, **kwargs):
        raise self.error

    __array__ = __float__ = __int__ = __len__ = __iter__ = __getitem__ = __index__ = _raise
    __repr__ = __str__ = __bool__ = __eq__ = __hash__ = _raise


class Endless:
    """An answer whose every conversion runs forever."""

    def _loop(self, *args, **kwargs):
        while True:
            pass

    __array__ = __float__ = __int__ = __len__ = __iter__ = __getitem__ = __index__ = _loop
    __repr__ = __str__ = __bool__ = _loop


class Custom(BaseException):
    """A learner's own BaseException subclass."""


BASE_EXCEPTIONS = [GeneratorExit, KeyboardInterrupt, SystemExit, Custom, StopIteration, RecursionError]

VALUE_JUNK = [None, ..., "0.5", b"x", 3, True, 1 + 2j, np.nan, np.inf, [1, 2], [[1, 2], [3]], {"a": 1},
              {1, 2}, object(), print, np.zeros((3, 3)), np.empty((0,)), np.array(["a", "b"]),
              np.ma.masked_array([1.0, 2.0], mask=[0, 1]), (x for x in range(3)), Hostile(GeneratorExit())]


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("junk", range(len(VALUE_JUNK)))
def test_junk_values_get_a_verdict(label, junk, capfd):
    answer = VALUE_JUNK[junk]
    v = check(label, answer, time_limit=LIMIT)
    assert v.status in ("wrong", "not done") and v.message, v
    if answer is None or answer is Ellipsis:
        assert v.status == "not done"
    assert capfd.readouterr().err == ""


def _raises(error):
    def learner(*args, **kwargs):
        raise error

    return learner


CODE_JUNK = [
    # (answer, status, phrase)
    ("my_function", "wrong", "expected a function, got a str"),
    ([1, 2, 3], "wrong", "expected a function, got a list"),
    (np.ones((2, 3)), "wrong", "Pass the function itself"),
    (_raises(NotImplementedError), "not done", "still raises NotImplementedError"),
    (_raises(NotImplementedError("todo")), "not done", "still raises NotImplementedError"),
    (_raises(ValueError("my own message")), "wrong", "raised ValueError: my own message"),
    (_raises(KeyError("k")), "wrong", "raised KeyError"),
    (lambda *a, **k: None, "not done", "returns None"),
    (lambda *a, **k: ..., "not done", "returns `...`"),
    (lambda *a, **k: "text", "wrong", "text"),
    (lambda *a, **k: object(), "wrong", ""),
    (lambda *a, **k: np.full((3, 3, 3), np.nan), "wrong", ""),
    (lambda *a, **k: np.zeros((1,)), "wrong", ""),
    (lambda *a, **k: 1 + 2j, "wrong", ""),
    (lambda: 1, "wrong", "The exercise calls it as"),
]


@pytest.mark.parametrize("label", CODE_LABELS)
@pytest.mark.parametrize(("answer", "status", "phrase"), CODE_JUNK)
def test_junk_functions_get_a_verdict(label, answer, status, phrase, capfd):
    v = check(label, answer)
    assert v.status == status, v
    assert phrase in v.message, v.message
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("label", ["ex-split-heads", "ex-merge-heads", "ex-multi-head-attention",
                                   "ex-head-entropy", "ex-param-count", "ex-online-softmax"])
def test_nan_results_are_explained(label):
    def nan_like(*args, **kwargs):
        ref = {"ex-split-heads": mha.split_heads, "ex-merge-heads": mha.merge_heads,
               "ex-head-entropy": mha.head_entropy,
               "ex-multi-head-attention": lambda *a: mha.multi_head_attention(*a, causal=True),
               "ex-param-count": costs._param_count,
               "ex-online-softmax": costs_measured.merge_reference}[label](*args, **kwargs)
        if isinstance(ref, tuple):
            return ref[0] * np.nan, ref[1]
        return np.asarray(ref, dtype=float) * np.nan

    _wrong(label, nan_like, "NaN")


@pytest.mark.parametrize("label", ["ex-one-hot-blend", "ex-shapes-512", "ex-role-partner",
                                   "ex-shapes-768", "ex-decode-intensity", "ex-q-llms",
                                   "ex-key-width-halving", "ex-break-toy"])
@pytest.mark.parametrize("junk", range(len(VALUE_JUNK)))
def test_junk_inside_the_dict_gets_a_verdict(label, junk):
    keys = {"ex-one-hot-blend": blend_outputs().keys(),
            "ex-shapes-512": shapes_512().keys(), "ex-role-partner": ["partner", "weight"],
            "ex-shapes-768": ["W_O", "W_1", "n_weights", "must_change"],
            "ex-decode-intensity": ["Gemma 2B", "Gemma 7B"], "ex-q-llms": ["q", "weight"],
            "ex-key-width-halving": ["by BLEU", "by perplexity", "overall"],
            "ex-break-toy": ["without_layer_1", "two_back"]}[label]
    for key in keys:
        answer = {k: (VALUE_JUNK[junk] if k == key else "x") for k in keys}
        assert not check(label, answer, time_limit=LIMIT).ok


def test_an_endless_iterable_is_not_consumed():
    import itertools

    # The checker must refuse an endless iterable at once, without reading it. The limit only
    # catches a checker that does read it: generous, so a busy machine cannot fail a right checker
    # (0.3 s did, on a machine running four other jobs).
    for label, answer in (("ex-head-writes", itertools.count()),
                          ("ex-shapes-512", {**shapes_512(), "Q": itertools.count()})):
        v = check(label, answer, time_limit=10)
        assert v.status == "wrong" and "took more than" not in v.message, v


# ----------------------------------------------------------------------------- secrecy

def _numbers_in(message):
    return {float(x) for x in re.findall(r"\d+\.\d+", message)}


@pytest.mark.parametrize("label, answer, secrets", [
    ("ex-compromise-row", [0.3, 0.3, 0.4], compromise_reference().round(2)),
    ("ex-compromise-row", [0.3, 0.4, 0.3], compromise_reference().round(2)),
    ("ex-head-writes", np.ones((4, 4)), head_writes().round(2).ravel()),
    ("ex-head-writes", head_writes().round(1), head_writes().round(2).ravel()),
    ("ex-role-partner", {"partner": "same word", "weight": 0.5}, [round(role_partner()["weight"], 2)]),
    ("ex-q-llms", {"q": 0.0, "weight": 1 / 3}, [0.55, 0.549, 0.363]),
    ("ex-q-llms", {"q": 0.3, "weight": 0.3}, [0.55, 0.549, 0.363]),
    ("ex-q-llms", {"q": 0.55, "weight": 0.3}, [0.549, 0.363]),
    ("ex-zero-vs-mean", zero_and_mean() + 0.5, zero_and_mean().ravel()),
    ("ex-zero-vs-mean", zero_and_mean(column_mean=2.5), zero_and_mean().ravel()),
    ("ex-wrong-copy", 0.0, [-0.5, -0.50, -0.498]),
    ("ex-wrong-copy", -0.45, [-0.5, -0.498]),
])
def test_messages_do_not_give_the_answer_away(label, answer, secrets):
    message = check(label, answer).message
    assert not _numbers_in(message) & {float(x) for x in secrets}, message


def test_shape_messages_do_not_give_the_answer_away():
    for edit in ({"Q": (1, 1)}, {"Q_i": (1, 1)}, {"concat": (1, 1)}, {"h_enters": "output"},
                 {"h_gone": "attend"}):
        message = check("ex-shapes-512", {**shapes_512(), **edit}).message
        assert "64" not in message and "512" not in message and "'split'" not in message


# ----------------------------------------------------------------------------- BaseException

@pytest.mark.parametrize("label", CODE_LABELS)
@pytest.mark.parametrize("error", BASE_EXCEPTIONS, ids=lambda e: e.__name__)
def test_a_learner_raising_any_base_exception_gets_a_verdict(label, error):
    v = _wrong(label, _raises(error("from the learner")), f"raised {error.__name__}")
    assert "from the learner" in v.message


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("error", BASE_EXCEPTIONS, ids=lambda e: e.__name__)
def test_an_answer_whose_conversions_raise_any_base_exception_gets_a_verdict(label, error):
    v = check(label, Hostile(error("boom")), time_limit=LIMIT)
    assert v.status == "wrong" and v.message


def test_a_learner_whose_exception_cannot_be_printed_gets_a_verdict():
    class Unprintable(BaseException):
        def __str__(self):
            raise GeneratorExit

    _wrong("ex-split-heads", _raises(Unprintable()), "raised Unprintable")


def test_the_readers_ctrl_c_still_stops_the_check():
    def pressed(X, h):
        signal.raise_signal(signal.SIGINT)  # what Ctrl-C (or "interrupt the kernel") sends
        return mha.split_heads(X, h)

    with pytest.raises(KeyboardInterrupt):
        check("ex-split-heads", pressed)

    def swallowed(X, h):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass
        return mha.split_heads(X, h)

    with pytest.raises(KeyboardInterrupt):
        check("ex-split-heads", swallowed)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert check("ex-split-heads", mha.split_heads).ok  # and the next check runs as usual


# ----------------------------------------------------------------------------- time limit

def _forever(*args, **kwargs):
    while True:
        pass


def _forever_swallowing(*args, **kwargs):
    while True:
        try:
            while True:
                pass
        except Exception:  # a learner's catch-all cannot swallow the time limit
            pass


@pytest.mark.parametrize("label", CODE_LABELS)
@pytest.mark.parametrize("func", [_forever, _forever_swallowing])
def test_a_learner_that_never_returns_is_stopped_and_told(label, func):
    v = _wrong(label, func, f"ran for more than {LIMIT:g} s", time_limit=LIMIT)
    assert "a loop that never ends" in v.message


@pytest.mark.parametrize("label", ["ex-compromise-row", "ex-kv-cache-size", "ex-q-love"])
def test_an_answer_that_never_converts_is_stopped_and_told(label):
    _wrong(label, Endless(), f"took more than {LIMIT:g} s", time_limit=LIMIT)


def test_the_time_limit_works_off_the_main_thread():
    verdicts = []
    worker = threading.Thread(target=lambda: verdicts.append(check("ex-split-heads", _forever, time_limit=LIMIT)))
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive()
    assert verdicts and "ran for more than" in verdicts[0].message
    assert check("ex-split-heads", mha.split_heads).ok


def test_the_time_limit_leaves_no_alarm_behind():
    check("ex-split-heads", _forever, time_limit=LIMIT)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.default_int_handler, None)


def test_a_slow_but_finite_learner_is_not_stopped():
    import time

    def slow(X, h):
        time.sleep(0.05)
        return mha.split_heads(X, h)

    assert check("ex-split-heads", slow, time_limit=1.0).ok


# ----------------------------------------------------------------------------- complex, rounding, names

@pytest.mark.parametrize("label, right", [
    ("ex-one-head-llms-row", lambda: mha.softmax(np.where(np.arange(3) == 1, -np.inf,  # "love" hidden
        (lambda ex: (ex.X @ ex.W_Q)[2] @ (ex.X @ ex.W_K).T / 2.0)(mha.examples.i_love_llms())))),
    ("ex-compromise-row", compromise_reference),
])
def test_complex_rows_are_refused(label, right):
    row = right()
    assert check(label, row).ok
    for answer in (row + 0j, row + 1e-3j, list(row.astype(complex)), np.array(row, dtype=object) + 1j):
        _wrong(label, answer, "complex numbers")


def test_a_function_returning_complex_numbers_is_refused():
    _wrong("ex-split-heads", lambda X, h: mha.split_heads(X, h) + 0j, "complex numbers")
    _wrong("ex-stable-softmax", lambda x: mha.softmax(x).astype(complex), "complex numbers")


def test_rounding_is_recognised_before_a_mistake():
    weighted = compromise_reference()
    c = np.array(COMPROMISE_COUNTS, dtype=float)[:, None]
    geo = np.exp((c * np.log(COMPROMISE_TARGETS)).sum(axis=0) / c.sum())
    geo = geo / geo.sum()
    v = _wrong("ex-compromise-row", weighted.round(1), "rounded to 1 decimal")
    assert "geometric" not in v.message and "keep at least 2 decimals" in v.message
    _wrong("ex-compromise-row", geo.round(3), "geometric mean")  # the real mistake is still named
    # the equal-count row of the page is named as a mistake, not taken for rounding
    v = _wrong("ex-compromise-row", best_single_row(COMPROMISE_TARGETS).row.round(2), "count once")
    assert "decimal" not in v.message
    ex = mha.examples.i_love_llms()
    llms = mha.softmax(np.where(np.arange(3) == 1, -np.inf, (ex.X @ ex.W_Q)[2] @ (ex.X @ ex.W_K).T / 2.0))
    if abs(llms.round(1).sum() - 1) > 0.02:  # a rounded row need not sum to 1: not a missing softmax
        v = _wrong("ex-one-head-llms-row", llms.round(1), "rounded to 1 decimal")
        assert "sum to" not in v.message
    t = costs.KV_TASK
    kv = mha.costs.kv_cache_bytes(t["n_layers"], t["n_kv_heads"], t["d_k"], t["T"],
                                  bytes_per_value=t["bytes_per_value"])
    v = _wrong("ex-kv-cache-size", float(f"{kv:.3g}"), "rounded to 3 significant figures")
    assert "without rounding" in v.message


def test_entries_of_token_rows_are_named_in_words():
    ex = mha.examples.i_love_llms()
    S = (ex.X @ ex.W_Q) @ (ex.X @ ex.W_K).T
    row = mha.softmax(np.where(np.arange(3) == 1, -np.inf, S[2] / 2.0))  # the key of "love" hidden
    v = _wrong("ex-one-head-llms-row", row + np.array([0.0, 0.03, -0.03]), "the weight on 'love' is too large")
    assert "index" not in v.message
    _wrong("ex-compromise-row", [0.2, 0.6, 0.2], "the weight on 'I' is too small")
    bad = head_writes() + np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0] * 4, [0.0] * 4])
    _wrong("ex-head-writes", bad, "head 2's write into output column 1")
    blend = blend_outputs()
    blend["two_heads_swapped"] = blend["two_heads_swapped"] + np.eye(8)[5]
    _wrong("ex-one-hot-blend", blend, "head 2's entry for 'cat'")

    def off_A(*args):
        Y, A = mha.multi_head_attention(*args, causal=True)
        A = A.copy()
        A[..., 1, 0, 2] += 0.1
        return Y, A

    _wrong("ex-multi-head-attention", off_A, "head 2, query 'I', key 'LLMs' is too large")  # A[..., 1, :, :] is head 2: heads count from 1

    def off_Y(*args):
        Y, A = mha.multi_head_attention(*args, causal=True)
        Y = Y.copy()
        Y[..., 1, 1] += 0.5
        return Y, A

    _wrong("ex-multi-head-attention", off_Y, "token 'love', column 1 is too large")


def test_near_a_threshold_enough_decimals_are_printed():
    # The q where "love" gets exactly 0.9, found by bisection; ex-q-love asks for it to two
    # decimals, so a q 0.006 to either side is wrong, with a weight within 0.0005 of 0.9.
    low, high = -10.0, 0.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if weights_for_q(mid)[1] > 0.9 else (low, mid)
    for q, below in ((high + 0.006, True), (low - 0.006, False)):
        v = check("ex-q-love", q)
        assert v.status == "wrong"
        shown = re.search(r'"love" gets ([0-9]+\.[0-9]+)', v.message).group(1)
        assert (float(shown) < 0.9) == below and shown not in ("0.900", "0.90", "0.9"), v.message
    assert check("ex-q-love", low).ok


@pytest.mark.parametrize("wrap", [tuple, list, np.array, lambda p: np.array(p, dtype=np.int64),
                                  lambda p: np.array(p, dtype=float)])
def test_a_pair_may_be_any_sequence_or_array_of_two(wrap):
    if np.asarray(wrap((0, 0.5))).dtype.kind != "i":  # the pair (T_cross, saved) holds a fraction
        assert check("ex-attention-flops", wrap(costs.flop_answers())).ok
    assert check("ex-kv-head", wrap((3, 24_576_000))).ok
    if np.asarray(wrap((0, 1))).dtype.kind == "i":  # four predictions, as 0/1 or bools
        assert check("ex-mean-survives", wrap((0, 1, 1, 0))).ok


# ----------------------------------------------------------------------------- HTML

_SCRIPT = "<script>alert('x')</script>"


class Shouting:
    def __repr__(self):
        return _SCRIPT + "`code`"


def _html_is_safe(v):
    page = v._repr_html_()
    assert "<script>" not in page and "</script>" not in page, page
    assert "<code>code</code>" not in page, page  # the learner's backticks stay plain text


@pytest.mark.parametrize("label", LABELS)
def test_learner_text_is_escaped_in_the_html(label):
    for answer in (_SCRIPT, Shouting(), [Shouting()], {"free": [_SCRIPT], "h_enters": _SCRIPT, "Q": Shouting()},
                   _raises(ValueError(_SCRIPT + "`code`")), lambda *a, **k: _SCRIPT, lambda *a, **k: Shouting(),
                   _raises(type("Evil`code`", (Exception,), {})())):
        _html_is_safe(check(label, answer, time_limit=LIMIT))


def test_an_unknown_label_is_escaped_in_the_html():
    _html_is_safe(check(_SCRIPT + "`code`", 1))
    _html_is_safe(check(Shouting(), 1))


# ----------------------------------------------------------------------------- properties over every checker

_VALUES = st.recursive(
    st.none() | st.just(...) | st.booleans() | st.integers() | st.floats() | st.complex_numbers()
    | st.text(max_size=8) | st.just(_SCRIPT) | st.builds(object) | st.builds(Shouting) | st.builds(Endless)
    | st.builds(Hostile, st.sampled_from(BASE_EXCEPTIONS).map(lambda error: error("x"))),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
    | st.dictionaries(st.sampled_from(["row", "d_k", "Q", "free", "raw", "one_head", "a"]) | st.text(max_size=3),
                      inner, max_size=4),
    max_leaves=8,
)


def _learner(kind, value):
    if kind == "returns":
        return lambda *args, **kwargs: value
    if kind == "loops":
        return _forever
    return _raises(kind("from the learner"))


_ANSWERS = _VALUES | st.builds(_learner, st.sampled_from(["returns", "loops", *BASE_EXCEPTIONS]), _VALUES)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=_ANSWERS)
def test_every_checker_returns_a_safe_verdict_for_any_answer(answer):
    """Never raises, never hangs, always escapes: for every registered checker."""
    for label in LABELS:
        v = check(label, answer, time_limit=SHORT)
        assert isinstance(v, mha.checks.Verdict) and v.status in ("correct", "wrong", "not done")
        assert isinstance(v.message, str) and v.message
        _html_is_safe(v)
