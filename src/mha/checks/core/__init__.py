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

The package has four parts, each importing only the ones before it:

* :mod:`~mha.checks.core.deadline`: time limits and the reader's Ctrl-C
  (signals, a timer thread, ctypes). Exercise authors leave it alone.
* :mod:`~mha.checks.core.feedback`: :class:`Verdict`, :class:`Feedback`,
  :func:`wrong`, :func:`not_done`, :func:`is_unfinished` and safe text: how a
  verdict looks and reads.
* :mod:`~mha.checks.core.answers`: reading and comparing answers
  (:func:`answer_array`, :func:`compare`, ...), where most messages are worded.
* :mod:`~mha.checks.core.registry`: :func:`checker`, :func:`check` and
  :func:`call_learner`, which run checkers and learner code under the rules above.

Every public name is importable from here (``from .core import compare``).

Examples
--------
>>> from mha.checks import check
>>> check("ex-split-heads", ...).status
'not done'
>>> check("ex-split-heads", "split_heads").status
'wrong'
"""

from .answers import answer_array, compare, dict_parts, entry_names, expect_shape, one_number, pair, rounding_of
from .deadline import TIME_LIMIT
from .feedback import Feedback, Verdict, is_unfinished, near_threshold, not_done, safe_repr, wrong
from .registry import call_learner, check, checker, checker_module, labels

__all__ = [
    "TIME_LIMIT", "Feedback", "Verdict", "check", "checker", "labels", "wrong", "not_done",
    "call_learner", "answer_array", "expect_shape", "compare", "is_unfinished", "safe_repr",
    "entry_names", "dict_parts", "pair", "one_number", "near_threshold", "checker_module", "rounding_of",
]
