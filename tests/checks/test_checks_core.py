"""Tests of the exercise-check machinery, mha.checks.core.

The promises under test: check() always returns a Verdict with one of three
states, never raises, never writes to stderr, never lets a warning out, and
never states the expected answer; the helpers turn every kind of junk into a
short message.
"""

from __future__ import annotations

import re
import sys
import warnings

import nbformat
import numpy as np
import pytest

import mha.checks
from mha.checks import core
from mha.checks.core import deadline, registry
from mha.checks.core import (
    Feedback,
    Verdict,
    answer_array,
    call_learner,
    check,
    checker,
    compare,
    expect_shape,
    is_unfinished,
    labels,
    not_done,
    wrong,
)


@pytest.fixture
def register():
    """register(label, func, kind="numeric"): a checker that exists for one test only."""
    added = []

    def _register(label, func, kind="numeric"):
        checker(label, kind=kind)(func)
        added.append(label)
        return func

    yield _register
    for label in added:
        registry._REGISTRY.pop(label, None)


def _feedback(func, *args, **kwargs) -> Feedback:
    """The Feedback that ``func(*args, **kwargs)`` stops with."""
    with pytest.raises(Feedback) as info:
        func(*args, **kwargs)
    return info.value


# ----------------------------------------------------------------------------- the public API

def test_package_exports_the_whole_api():
    for name in ("checker", "check", "Verdict", "wrong", "not_done", "call_learner", "answer_array",
                 "expect_shape", "compare", "labels"):
        assert getattr(mha.checks, name) is getattr(core, name)


def test_labels_lists_every_coding_exercise_with_its_kind():
    found = labels()
    for label in ("ex-split-heads", "ex-merge-heads", "ex-multi-head-attention", "ex-param-count",
                  "ex-head-entropy"):
        assert found[label] == "code"
    assert list(found) == sorted(found)


# ----------------------------------------------------------------------------- Verdict

@pytest.mark.parametrize(("status", "title", "icon"),
                         [("correct", "Correct", "\u2713"), ("wrong", "Not quite", "\u2717"),
                          ("not done", "Not done yet", "\u270e")])
def test_verdict_shows_its_state_as_text_and_html(status, title, icon):
    v = Verdict("ex-x", status, "look at `axis`.")
    assert v.ok == (status == "correct")
    assert str(v).startswith(f"{icon}")
    assert f"{title} (ex-x): look at `axis`." in str(v)
    assert repr(v) == str(v)
    page = v._repr_html_()
    assert 'role="status"' in page
    assert f"mha-verdict-{status.replace(' ', '-')}" in page
    assert f'<strong><span aria-hidden="true">{icon}</span> {title}:</strong>' in page
    assert "<code>axis</code>" in page
    assert "border-left" in page and "background" in page


def test_verdict_html_escapes_the_message_and_label():
    page = Verdict("<b>", "wrong", "got <script>alert(1)</script> & more")._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page and "&amp; more" in page
    assert "&lt;b&gt;" in page


def test_verdict_refuses_an_unknown_state():
    with pytest.raises(ValueError, match="status must be one of"):
        Verdict("ex-x", "maybe", "?")


# ----------------------------------------------------------------------------- check()

def test_check_reports_correct_with_the_checkers_message_or_a_default(register):
    register("ex-test-praise", lambda answer: "nicely done.")
    register("ex-test-quiet", lambda answer: None)
    assert check("ex-test-praise", 1) == Verdict("ex-test-praise", "correct", "nicely done.")
    assert check("ex-test-quiet", 1) == Verdict("ex-test-quiet", "correct", "well done.")


@pytest.mark.parametrize("answer", [None, ..., [..., 3], (512, ...), {"Q": (..., 4)}, [[1, ...]]])
def test_placeholders_are_not_done_and_never_reach_the_checker(register, answer):
    def boom(_):
        raise AssertionError("the checker must not see a placeholder")

    register("ex-test-boom", boom)
    v = check("ex-test-boom", answer)
    assert v.status == "not done"
    assert "..." in v.message


def test_unknown_labels_get_a_suggestion_and_never_raise():
    v = check("ex-split-haeds", None)
    assert v.status == "wrong" and "no exercise called" in v.message and '"ex-split-heads"' in v.message
    v = check("ex-nothing-like-any-label-zzz", 1)
    assert v.status == "wrong" and "Copy the label" in v.message
    for label in (None, ["ex-split-heads"], 3, {"a": 1}):
        v = check(label, 1)
        assert v.status == "wrong" and "label" in v.message


def test_a_failing_checker_becomes_a_message(register):
    class Unprintable(Exception):
        def __str__(self):
            raise RuntimeError("no")

    register("ex-test-buggy", lambda a: 1 / 0)
    register("ex-test-unprintable", lambda a: (_ for _ in ()).throw(Unprintable()))
    v = check("ex-test-buggy", 1)
    assert v.status == "wrong" and "could not be checked" in v.message and "ZeroDivisionError" in v.message
    assert "Unprintable" in check("ex-test-unprintable", 1).message


def test_feedback_with_an_unknown_state_is_reported_as_wrong(register):
    def odd(_):
        raise Feedback("perhaps", "hmm")

    register("ex-test-odd", odd)
    assert check("ex-test-odd", 1) == Verdict("ex-test-odd", "wrong", "hmm")


def test_long_messages_are_cut(register):
    register("ex-test-long", lambda a: wrong("x" * 5000))
    assert len(check("ex-test-long", 1).message) <= 600


def test_check_writes_nothing_to_stderr_and_lets_no_warning_out(register, capfd):
    def noisy(func):
        out = call_learner(func, np.array([1e308, 0.0]))
        return compare(out, [1.0, 1.0])

    def learner(x):
        print("learner debug line", file=sys.stderr)
        warnings.warn("learner warning")
        return x * 10 / x  # overflow, then 0/0: NumPy would warn

    register("ex-test-noisy", noisy, kind="code")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = check("ex-test-noisy", learner)
    assert v.status == "wrong"
    assert caught == []
    assert capfd.readouterr().err == ""


def test_never_raises_on_junk_answers(register, capfd):
    register("ex-test-array", lambda a: compare(a, [[1.0, 2.0], [3.0, 4.0]]))
    register("ex-test-func", lambda f: compare(call_learner(f, np.ones((2, 2))), np.ones((2, 2))), kind="code")

    class Weird:
        def __repr__(self):
            raise RuntimeError("no repr")

        def __array__(self, *args, **kwargs):
            raise RuntimeError("no array")

    junk = [None, ..., "12", b"12", [1, 2], [[1, 2], [3]], {"a": 1}, {1, 2}, object(), Weird(), np.nan,
            [[np.nan, 1], [2, 3]], np.inf, 1 + 2j, True, np.zeros((3, 3)), (x for x in range(3)), print,
            lambda: None, np.array(["a", "b"]), np.empty((0,))]
    for answer in junk:
        for label in ("ex-test-array", "ex-test-func"):
            v = check(label, answer)
            assert isinstance(v, Verdict)
            assert v.status in ("wrong", "not done")
            assert v.message
    assert capfd.readouterr().err == ""


# ----------------------------------------------------------------------------- call_learner

def test_call_learner_passes_copies_and_returns_the_result():
    X = np.arange(6.0).reshape(2, 3)
    X.setflags(write=False)
    seen = []

    def learner(x, k):
        seen.append(x)
        return x.sum() * k

    assert call_learner(learner, X, 2) == 30.0
    assert seen[0] is not X and seen[0].flags.writeable


@pytest.mark.parametrize(
    ("func", "status", "phrase"),
    [
        (..., "not done", "..."),
        (None, "not done", "..."),
        (np.ones(3), "wrong", "Pass the function itself"),
        ("split_heads", "wrong", "got a str"),
        (lambda X: (_ for _ in ()).throw(NotImplementedError()), "not done", "NotImplementedError"),
        (lambda X: (_ for _ in ()).throw(ValueError("bad width")), "wrong", "raised ValueError: bad width"),
        (lambda X: sys.exit(3), "wrong", "raised SystemExit"),
        (lambda X: None, "not done", "returns None"),
        (lambda X: ..., "not done", "returns `...`"),
    ],
)
def test_call_learner_turns_stubs_and_crashes_into_feedback(func, status, phrase):
    fb = _feedback(call_learner, func, np.ones((2, 3)), name="split_heads", case="X of shape (2, 3)")
    assert fb.status == status
    assert phrase in fb.message


def test_call_learner_names_the_case_and_the_shapes_to_look_at():
    def broken(X, h):
        return X.reshape(h, -1, 7)

    fb = _feedback(call_learner, broken, np.ones((2, 4, 8)), 2, name="split_heads",
                   case="a batch: X of shape (2, 4, 8)", hint="Use negative axes.")
    assert "`split_heads` raised ValueError" in fb.message
    assert "for a batch: X of shape (2, 4, 8)" in fb.message and "Use negative axes." in fb.message


def test_call_learner_shows_the_expected_call_when_parameters_do_not_fit():
    fb = _feedback(call_learner, lambda d, h: d * h, 768, 12, n_kv_heads=4, name="count",
                   signature="count(d, h, n_kv_heads=None)")
    assert "unexpected keyword argument" in fb.message
    assert "The exercise calls it as `count(d, h, n_kv_heads=None)`" in fb.message


def test_call_learner_catches_a_function_that_changes_its_input():
    def in_place(X, W):
        W *= 2
        return X @ W

    fb = _feedback(call_learner, in_place, np.ones((2, 2)), np.eye(2), name="project", case="the small case")
    assert fb.status == "wrong"
    assert "changed its input `W` in place for the small case" in fb.message

    def resized(X):
        X.resize((1,), refcheck=False)
        return 1.0

    assert "changed its input `X`" in _feedback(call_learner, resized, np.ones(3)).message


# ----------------------------------------------------------------------------- answer_array, expect_shape

@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ("0.5", "is text"),
        (True, "yes/no value"),
        ([[1, 2], [3]], "could not be read as numbers"),
        ({"a": 1}, "could not be read as numbers"),
        (1 + 2j, "holds complex numbers"),
        (np.array([0.5, 1 + 2j]), "holds complex numbers"),
        (np.array([0.5, 1.0], dtype=complex), "holds complex numbers"),
        (np.array([1, 2 + 1j], dtype=object), "holds complex numbers"),
        (["0.5", "1"], "holds text"),
        (np.array([True, False]), "yes/no values"),
        (np.ma.masked_array([1.0, 2.0], mask=[0, 1]), "masked array"),
        ([1.0, np.nan], "contains NaN at index (1,)"),
        ([[1.0, 2.0], [np.inf, 0.0]], "contains infinity at index (1, 0)"),
    ],
)
def test_answer_array_explains_junk(value, phrase):
    fb = _feedback(answer_array, value, "your row")
    assert fb.status == "wrong" and phrase in fb.message and fb.message.startswith("your row")


def test_answer_array_reads_numbers_lists_and_arrays():
    assert answer_array(3).shape == ()
    np.testing.assert_array_equal(answer_array([[1, 2], [3, 4]]), [[1.0, 2.0], [3.0, 4.0]])
    assert answer_array(np.float32(0.5)).dtype == np.float64
    assert _feedback(answer_array, ...).status == "not done"


def test_expect_shape_names_both_shapes():
    expect_shape(np.ones((2, 3)), (2, 3))
    fb = _feedback(expect_shape, np.ones((3, 2)), (2, 3), "Q", hint="Rows are tokens.")
    assert fb.message == "Q has shape (3, 2), but the expected shape is (2, 3). Rows are tokens."


# ----------------------------------------------------------------------------- compare

def test_compare_is_quiet_when_right_within_tolerance():
    compare([1.0, 2.0 + 1e-10], [1.0, 2.0])
    compare(np.float32(0.1), 0.1, atol=1e-6)


def test_compare_names_a_matching_mistake_before_the_shape():
    expected = np.arange(6.0).reshape(2, 3)
    swapped = expected.T
    fb = _feedback(compare, swapped, expected, mistakes=[(swapped, "rows and columns are swapped.")])
    assert fb.message == "rows and columns are swapped."


def test_compare_skips_mistakes_that_equal_the_answer_or_are_missing():
    expected = np.array([1.0, 2.0])
    compare(expected, expected, mistakes=[(expected.copy(), "never said"), (None, "never said")])
    fb = _feedback(compare, [1.0, 3.0], expected, mistakes=[(None, "never said"), ([5.0, 5.0], "nope")])
    assert "never said" not in fb.message and "nope" not in fb.message


def test_compare_reports_shape_then_the_first_entry_that_differs():
    fb = _feedback(compare, np.ones(3), np.ones(4), "your row", shape_hint="One weight per token.")
    assert fb.message == "your row has shape (3,), but the expected shape is (4,). One weight per token."
    expected = np.array([[0.2, 0.4], [0.6, 0.8]])
    got = np.array([[0.2, 0.4], [0.1, 0.9]])
    fb = _feedback(compare, got, expected, "A", hint="Look at the softmax.")
    assert fb.message == ("A differs at index (1, 0): your entry is too small (2 entries differ in all). "
                          "Look at the softmax.")


def test_compare_says_too_large_or_too_small_for_a_single_number():
    assert _feedback(compare, 7, 3, "your count").message == "your count is too large."
    assert _feedback(compare, 1, 3, "your count").message == "your count is too small."


def test_compare_hints_at_rounding_only_when_asked():
    fb = _feedback(compare, 0.351, 0.3457, "your weight", hint="Look again.")
    assert fb.message == ("your weight is too large. It is close, but not within the tolerance: "
                          "if you rounded, keep more decimals. Look again.")
    fb = _feedback(compare, 2362000, 2362368, "your count", atol=0, rtol=0, rounding_hint=False)
    assert "decimals" not in fb.message


@pytest.mark.parametrize(("got", "expected"),
                         [(0.35, 0.3457), (2362000, 2362368), ([0.1, 0.2, 0.7], [0.1748, 0.2345, 0.5907]),
                          (12.5, 64.0), ([[1.5, 2.5]], [[1.25, 2.75]])])
def test_no_message_states_the_expected_numbers(got, expected):
    fb = _feedback(compare, got, expected, "your answer", rtol=0, atol=1e-9)
    for number in np.ravel(expected):
        texts = {f"{number}", f"{number:g}", f"{number:.2f}", f"{number:,.0f}", f"{number:.3g}"}
        for text in texts:
            if len(text.strip("0.,")) >= 2 and text not in {f"{g}" for g in np.ravel(got)}:
                assert text not in fb.message, (text, fb.message)
    diffs = np.abs(np.ravel(got) - np.ravel(expected))
    for diff in diffs:
        assert f"{diff:.3g}" not in fb.message


# ----------------------------------------------------------------------------- checker registry

def test_checker_refuses_a_bad_kind_or_label():
    with pytest.raises(ValueError, match="kind must be"):
        checker("ex-test-kind", kind="essay")
    with pytest.raises(TypeError, match="label must be a non-empty string"):
        checker("", kind="code")


def test_checker_refuses_a_second_function_for_a_label_but_allows_a_reload(register):
    def first(answer):
        """First line of the summary."""

    register("ex-test-twice", first)
    assert registry._REGISTRY["ex-test-twice"][2] == "First line of the summary."

    def other(answer):
        pass

    with pytest.raises(ValueError, match="already has a checker"):
        checker("ex-test-twice", kind="numeric")(other)

    def reloaded(answer):
        return "new"

    reloaded.__qualname__ = first.__qualname__  # what importlib.reload of the same module produces
    checker("ex-test-twice", kind="numeric")(reloaded)
    assert check("ex-test-twice", 1).message == "new"


def test_wrong_and_not_done_stop_with_feedback():
    assert _feedback(wrong, "look here").status == "wrong"
    fb = _feedback(not_done)
    assert fb.status == "not done" and "..." in fb.message


def test_is_unfinished():
    assert is_unfinished(None) and is_unfinished(...) and is_unfinished([1, [2, ...]])
    assert is_unfinished(np.array([1, ...], dtype=object))
    assert not is_unfinished(0) and not is_unfinished([1, 2]) and not is_unfinished(np.zeros(3))
    assert not is_unfinished("...")


# ----------------------------------------------------------------------------- stubs in a real kernel

def test_stub_cells_run_in_a_kernel_without_error_or_stderr():
    """What a chapter's "Try it" cells do before the reader fills anything in."""
    nbclient = pytest.importorskip("nbclient")
    cells = [
        "import mha\nimport mha.checks",
        "def split_heads(X, h):\n    # your code here\n    raise NotImplementedError",
        'mha.checks.check("ex-split-heads", split_heads)',
        "answer = ...  # replace ... with your answer",
        'mha.checks.check("ex-param-count", answer)',
        "def head_entropy(A):\n    return None",
        'mha.checks.check("ex-head-entropy", head_entropy)',
        'mha.checks.check("ex-split-heads", mha.split_heads)',
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in cells])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False).execute()
    outputs = [out for cell in nb.cells for out in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert not [o for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    shown = [o for o in outputs if o.output_type == "execute_result"]
    assert len(shown) == 4
    for out in shown:
        assert "text/html" in out.data and "mha-verdict" in out.data["text/html"]
    statuses = [re.search(r"mha-verdict-([a-z-]+)", o.data["text/html"]).group(1) for o in shown]
    assert statuses == ["not-done", "not-done", "not-done", "correct"]


# ----------------------------------------------------------------------------- adversarial learners

@pytest.mark.parametrize("error", [GeneratorExit, KeyboardInterrupt, SystemExit, BaseException])
def test_check_turns_any_base_exception_of_the_learner_into_a_verdict(register, error):
    def learner(X):
        raise error("learner's own")

    register("ex-test-base", lambda f: call_learner(f, np.ones(2), name="f"), kind="code")
    v = check("ex-test-base", learner)
    assert v.status == "wrong" and f"`f` raised {error.__name__}: learner's own" in v.message


def test_outside_a_check_a_keyboard_interrupt_is_let_through():
    """call_learner on its own cannot tell the reader's Ctrl-C from the learner's: it lets it stop."""
    def learner(X):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        call_learner(learner, np.ones(2))
    fb = _feedback(call_learner, lambda X: (_ for _ in ()).throw(GeneratorExit("g")), np.ones(2), name="f")
    assert "`f` raised GeneratorExit: g" in fb.message


def test_call_learner_stops_a_function_that_never_returns():
    def endless(X):
        while True:
            try:
                X = X + 1
            except Exception:
                pass

    assert deadline.current_limit() == core.TIME_LIMIT  # the default, outside a check
    fb = _feedback(call_learner, endless, np.ones(2), name="f", case="a small case", time_limit=0.1)
    assert fb.message == "`f` ran for more than 0.1 s for a small case; look for a loop that never ends."


def test_a_checker_cannot_be_made_to_say_correct_by_feedback(register):
    def cheat(_):
        raise Feedback("correct", "trust me")

    register("ex-test-cheat", cheat)
    assert check("ex-test-cheat", 1).status == "wrong"


def test_check_refuses_odd_time_limits_quietly(register):
    register("ex-test-fine", lambda a: None)
    for limit in (0, -1, "1", True, float("nan")):
        assert check("ex-test-fine", 1, time_limit=limit).ok


def test_entry_names_name_entries_in_words_and_give_up_outside_the_axes():
    tokens = ("I", "love", "LLMs")
    name = core.entry_names("head", ("query", tokens), ("key", tokens), start=1)
    assert name((0, 1, 2)) == "head 1, query 'love', key 'LLMs'"
    assert name((0, 3, 0)) is None and name((0, 1)) is None
    fb = _feedback(compare, [0.2, 0.5, 0.3], [0.2, 0.4, 0.4], "your row",
                   entry=core.entry_names(tokens, template="the weight on {}"))
    assert fb.message.startswith("in your row, the weight on 'love' is too large (2 entries differ in all)")
    fb = _feedback(answer_array, [0.2, np.nan], "your row", entry=core.entry_names(("I", "love")))
    assert "contains NaN at 'love'" in fb.message


def test_compare_names_rounding_before_a_mistake_and_counts_decimals():
    fb = _feedback(compare, [0.3, 0.4], [0.3167, 0.3667], "your row", atol=0.006,
                   mistakes=[([0.3, 0.4], "a known mistake.")])
    assert "rounded to 1 decimal" in fb.message and "keep at least 2 decimals" in fb.message
    assert "known mistake" not in fb.message
    fb = _feedback(compare, 2360000, 2362368, "your count", atol=0, rtol=0, rounding_hint=False)
    assert "rounded to 3 significant figures" in fb.message and "without rounding" in fb.message
    fb = _feedback(compare, [0.31, 0.4], [0.3167, 0.3667], "your row", atol=0.006)
    assert "rounded" not in fb.message.split(".")[0]  # 0.31 is not a rounding of 0.3167


@pytest.mark.parametrize("value", [(1, 2), [1, 2], np.array([1, 2]), np.array([1.0, 2.0]), range(1, 3)])
def test_pair_accepts_any_sequence_or_array_of_two(value):
    assert tuple(float(v) for v in core.pair(value)) == (1.0, 2.0)


@pytest.mark.parametrize("value, phrase", [("12", "should be a pair"), ({1: 2, 3: 4}, "should be a pair"),
                                           (3, "should be a pair"), ([1, 2, 3], "got 3"),
                                           (np.array(5), "should be a pair")])
def test_pair_refuses_everything_else(value, phrase):
    assert phrase in _feedback(core.pair, value).message


def test_near_threshold_shows_the_side_of_the_threshold():
    assert core.near_threshold(0.9504, 0.95) == "0.9504"
    assert core.near_threshold(0.95, 0.95) == "0.950"
    assert float(core.near_threshold(np.nextafter(0.95, 0), 0.95)) < 0.95


def test_safe_repr_never_raises_and_makes_backticks_plain():
    class Bad:
        def __repr__(self):
            raise GeneratorExit

    assert core.safe_repr(Bad()) == "<a Bad>"
    assert "`" not in core.safe_repr("`x`")
