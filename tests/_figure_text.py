"""Every text a figure draws is 10 pt or more (issue 30): a watch on matplotlib's ``Text.draw``.

The site shows a figure at 0.66 of its drawn width or more, and figures are drawn at 100 dpi, so
10-pt text is 9 CSS px or more on a phone and on a desktop; widget frames are shown at their
drawn size at most. Text smaller than 10 pt breaks that promise. Explicit sizes are not the only
way to get there (a relative size such as ``"small"``, a library function's own size, a legend's
``fontsize``), so this watch looks at what is drawn: every visible, non-blank text artist (titles,
tick labels, legends, annotations, cell numbers, colour-bar labels) at the moment it is drawn,
through ``Figure.savefig``, the inline backend, ``glue`` or a widget's frame painter alike.
Sub- and superscripts inside a formula (``$d_k$``) are drawn smaller by mathtext and are not
counted: the text's size is its base size.

Used by ``tests/lib/test_figure_text.py`` (in this process) and ``tests/site/test_notebooks.py``,
which runs :func:`report_to_stderr` in each chapter's kernel before the chapter's first cell, so
a chapter that draws small text writes to stderr and fails its run.
"""
from __future__ import annotations

import contextlib
import sys

from matplotlib.text import Text

SMALLEST_PT = 10.0  # 10 pt at 100 dpi is 13.9 px; at 0.66 of the drawn width, 9.2 CSS px

_ORIGINAL_DRAW = Text.draw


def small(text) -> bool:
    """True for a visible, non-blank text artist whose size is below :data:`SMALLEST_PT`."""
    return bool(text.get_visible() and text.get_text().strip() and text.get_fontsize() < SMALLEST_PT - 1e-9)


def describe(text) -> str:
    """``'0.25' at 9 pt`` (the text cut to 40 characters)."""
    return f"{text.get_text()[:40]!r} at {text.get_fontsize():g} pt"


def _watch(found):
    """Wrap ``Text.draw`` so that each small text drawn is passed to ``found`` first."""
    def draw(self, renderer, *args, **kwargs):
        if small(self):
            found(self)
        return _ORIGINAL_DRAW(self, renderer, *args, **kwargs)

    Text.draw = draw


@contextlib.contextmanager
def drawn_small_texts():
    """Inside the block, collect a description of every text under 10 pt that is drawn (a list)."""
    seen = []
    _watch(lambda text: seen.append(describe(text)))
    try:
        yield seen
    finally:
        Text.draw = _ORIGINAL_DRAW


def report_to_stderr():
    """From now on, in this process, write one line to stderr for each distinct small text drawn."""
    told = set()

    def found(text):
        line = describe(text)
        if line not in told:
            told.add(line)
            print(f"figure text under {SMALLEST_PT:g} pt: {line}", file=sys.stderr)

    _watch(found)
