"""Checkers for the book's "Try it" exercises.

Use one call everywhere::

    mha.checks.check("ex-split-heads", split_heads)

Every module in this package registers its exercises with
:func:`mha.checks.core.checker`; they are all imported here, so every label is
known as soon as ``mha.checks`` is.
"""

import importlib
import pkgutil

from .core import Verdict, check, checker, labels

__all__ = ["Verdict", "check", "checker", "labels"]

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "core":
        importlib.import_module(f"{__name__}.{_module.name}")
