"""Checkers for the book's "Try it" exercises.

Every exercise is checked with one call, by its label::

    mha.checks.check("ex-split-heads", split_heads)     # a function to test
    mha.checks.check("ex-some-number", answer)          # a value to test

The call returns a :class:`Verdict`: "correct", "not done" (the stub is
untouched) or "wrong" with where to look. It never raises, never hangs (the
learner's code gets :data:`TIME_LIMIT` seconds per call) and never shows the
expected answer, so a page with unfinished stubs still runs from top to bottom.

The machinery lives in :mod:`mha.checks.core`. The checkers live in one module
per chapter, named by the chapter's slug (``book/NN_slug.md`` ->
``mha.checks.slug``), and register their exercises with :func:`checker`.
Every module of this package is imported here, so every label is known as
soon as ``mha.checks`` is; :func:`labels` lists them.
"""

import importlib
import pkgutil

from .core import (
    TIME_LIMIT,
    Feedback,
    Verdict,
    answer_array,
    call_learner,
    check,
    checker,
    checker_module,
    compare,
    dict_parts,
    entry_names,
    expect_shape,
    is_unfinished,
    labels,
    near_threshold,
    not_done,
    one_number,
    pair,
    rounding_of,
    safe_repr,
    wrong,
)

__all__ = [
    "TIME_LIMIT",
    "Feedback",
    "Verdict",
    "answer_array",
    "call_learner",
    "check",
    "checker",
    "checker_module",
    "compare",
    "dict_parts",
    "entry_names",
    "expect_shape",
    "is_unfinished",
    "labels",
    "near_threshold",
    "not_done",
    "one_number",
    "pair",
    "rounding_of",
    "safe_repr",
    "wrong",
]

# One module per chapter; importing it registers the chapter's checkers. The machinery, the package
# core, is imported above and registers none (pkgutil lists it by its name, like a module).
for _module in pkgutil.iter_modules(__path__):
    if _module.name != "core":
        importlib.import_module(f"{__name__}.{_module.name}")
