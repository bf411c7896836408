"""Issue 31: junk of each kind, fed to every public function of the newer modules, one argument at a time.

One test per kind of junk (``_fuzz.JUNK``: None, NaN and infinity, huge finite numbers, wrong types,
bad numbers, huge integers, wrong shapes). Every call must return a finite result or raise a
``ValueError``/``TypeError`` whose message names the argument (or, when the junk makes another
argument stop fitting, that one); no other exception, no NaN or infinity, nothing that runs past
a few seconds. The functions and their valid calls are in ``_fuzz.py``.
"""

from __future__ import annotations

import inspect
import time

import numpy as np
import pytest

from _fuzz import JUNK, KINDS, OWNED_ELSEWHERE, cases, parameters, run_kind

CASES = {name: case for name, case in cases().items() if name not in OWNED_ELSEWHERE}


def _describe(outcomes):
    return "\n".join(f"{o.kind}: {o.case}({o.argument}={o.junk}) {o.message[:150]}" for o in outcomes[:25])


@pytest.mark.parametrize("kind", KINDS)
def test_every_function_refuses_junk_clearly_or_computes_a_finite_result(kind):
    start = time.perf_counter()
    outcomes = run_kind(kind, CASES, seconds=10.0, quick=True)
    bad = [o for o in outcomes if o.kind in ("ugly", "nonfinite", "hang")]
    assert not bad, f"{len(bad)} calls broke a promise:\n{_describe(bad)}"
    unnamed = [o for o in outcomes if o.kind == "clear" and not o.named
               and not any(p in o.message for p in parameters(CASES[o.case][0]))]
    assert not unnamed, f"{len(unnamed)} errors do not name an argument:\n{_describe(unnamed)}"
    assert len(outcomes) >= 100 * len(JUNK[kind])  # every function, every argument
    assert time.perf_counter() - start < 60


def test_the_cases_cover_every_public_function():
    """A new public function of these modules needs a valid call in ``_fuzz.py``."""
    import mha
    from mha import (backward, chunked, examples, fitting, head_roles, heads, induction, plotting, rank, split_trace,
                     stats)
    from mha import training as tr
    from mha.widgets import frames

    covered = {name.split(".", 1)[1] for name in cases()}
    skipped = {"cat_sat_mat", "i_love_llms", "use_book_style", "book_style", "clear_fit_cache"}  # no arguments
    for module in (backward, chunked, examples, fitting, head_roles, heads, induction, plotting, rank, split_trace,
                   stats, tr, frames):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) and name not in skipped:
                assert name in covered, f"{module.__name__}.{name} has no case in tests/lib/_fuzz.py"
    assert mha  # imported for the side effect of a complete package


def test_the_valid_calls_are_valid():
    import matplotlib.pyplot as plt

    try:
        for name, (func, make) in CASES.items():
            args, kwargs = make()
            with np.errstate(all="raise"):
                func(*args, **kwargs)
    finally:
        plt.close("all")  # plotting.heatmap draws into a new pyplot figure; leave none open for later tests
