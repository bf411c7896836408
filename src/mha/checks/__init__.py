"""Checkers for the book's "Try it" exercises.

Every exercise is checked with one call, by its label::

    mha.checks.check("ex-split-heads", split_heads)     # a function to test
    mha.checks.check("ex-some-number", answer)          # a value to test

The call returns a :class:`Verdict`: "correct", "not done" (the stub is
untouched) or "wrong" with where to look. It never raises and never shows the
expected answer, so a page with unfinished stubs still runs from top to bottom.

Every module in this package registers its exercises with :func:`checker`;
all of them are imported here, so every label is known as soon as
``mha.checks`` is. :func:`labels` lists them.
"""

import importlib
import pkgutil

from .core import (
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

__all__ = [
    "Feedback",
    "Verdict",
    "answer_array",
    "call_learner",
    "check",
    "checker",
    "compare",
    "expect_shape",
    "is_unfinished",
    "labels",
    "not_done",
    "wrong",
]

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "core":
        importlib.import_module(f"{__name__}.{_module.name}")
