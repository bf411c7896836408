"""No figure or widget frame of the library draws text under 10 pt (issue 30).

The site shows a figure at 0.66 of its drawn width or more and widget frames at most at their drawn
size, so 10-pt text stays at 9 CSS px or more on a phone and on a desktop. ``tests/_figure_text.py``
watches matplotlib's ``Text.draw``: here it runs every drawing function of ``mha.plotting`` and
``mha.widgets`` (the static widgets draw every frame; the live ones their first), and every text
drawn must be 10 pt or more. ``tests/site/test_notebooks.py`` runs the same watch in each chapter's
kernel. The last test reads the source of the chapters and of the library for explicit sizes
under 10 pt and relative ones (``"small"``), so a slip shows in the fast tests with its file and line.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Text

import mha
from mha import plotting, widgets
from mha import training as tr
from mha.widgets import frames

import _figure_text
from _figure_text import SMALLEST_PT, drawn_small_texts

ROOT = Path(__file__).resolve().parents[2]


def _maps(L=2, h=2, T=5, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(T), size=(L, h, T))  # (L, h, T, T)


@pytest.fixture(scope="module")
def lookups():
    """Tiny trained models (a few steps): enough to draw, quick to make."""
    return [tr.dictionary_lookup(h, steps=3) for h in (1, 2, 16)]


def _heatmap(**kwargs):
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    plotting.heatmap(_maps()[0, 0, :3, :3], ["I", "love", "LLMs"], ["I", "love", "LLMs"], ax=ax, title="t",
                     colorbar=True, **kwargs)
    fig.savefig(io.BytesIO(), format="png")


# Each drawing function of the library, called as the chapters call it (and a few other ways).
DRAWINGS = {
    "plotting.heatmap": lambda runs: _heatmap(),
    "plotting.heatmap (signed, 1 decimal)": lambda runs: _heatmap(vmin=-1, vmax=1, cmap=plotting.DIVERGING,
                                                                  fmt="{:+.1f}"),
    "frames.heatmap_frames": lambda runs: frames.heatmap_frames(_maps()[0], "abcde", "abcde", ["head 0", "head 1"]),
    "q_sweep": lambda runs: widgets.q_sweep(),
    "q_sweep_live": lambda runs: widgets.q_sweep_live(),
    "h_sweep": lambda runs: widgets.h_sweep(),
    "h_sweep (I love LLMs)": lambda runs: widgets.h_sweep(layer=mha.examples.i_love_llms()),
    "h_sweep_widths": lambda runs: widgets.h_sweep_widths(),
    "h_sweep_live": lambda runs: widgets.h_sweep_live(d=6, tokens=("a", "b")),
    "dk_sweep": lambda runs: widgets.dk_sweep(n=5),
    "dk_sweep_live": lambda runs: widgets.dk_sweep_live(n=3),
    "roles_explorer": lambda runs: widgets.roles_explorer(),
    "floor_explorer": lambda runs: widgets.floor_explorer(),
    "floor_explorer_live": lambda runs: widgets.floor_explorer_live("first token", 4),
    "lookup_explorer": lambda runs: widgets.lookup_explorer({"d_k = d/h": runs, "d_k fixed": runs}),
    "lookup_explorer_live": lambda runs: widgets.lookup_explorer_live(runs, h=2, steps=3),
    "head_browser": lambda runs: widgets.head_browser(_maps(), "abcde", causal=True),
    "head_browser (chapter 09, 80 dpi)": lambda runs: widgets.head_browser(_maps(), "abcde", causal=False,
                                                                           first="a", dpi=80),
}


def test_every_widget_is_drawn_here():
    """A new widget function must join DRAWINGS (its text is checked only if it is drawn)."""
    drawn = {name.split(" ")[0] for name in DRAWINGS}
    assert set(widgets.__all__) <= drawn, sorted(set(widgets.__all__) - drawn)


@pytest.mark.parametrize("name", DRAWINGS)
def test_no_text_under_10_pt(name, lookups):
    with plotting.book_style(), drawn_small_texts() as small:
        DRAWINGS[name](lookups)
    assert not small, f"{name} draws text under {SMALLEST_PT:g} pt: {sorted(set(small))[:10]}"


def test_the_watch_sees_small_text_where_it_is_drawn():
    """The watch bites: a 9-pt tick label, a "small" legend and a 7-pt annotation are caught; hidden
    and empty texts are not."""
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.plot([0, 1], label="line")
    ax.tick_params(labelsize=9)
    ax.legend(fontsize="small")
    ax.annotate("note", (0.5, 0.5), fontsize=7)
    ax.text(0, 0, "hidden", fontsize=6, visible=False)
    ax.text(0, 0, "", fontsize=6)
    with drawn_small_texts() as small:
        fig.savefig(io.BytesIO(), format="png")
    assert "'note' at 7 pt" in small and "'line' at 8.33 pt" in small
    assert any(s.endswith("at 9 pt") for s in small)
    assert not any("hidden" in s for s in small)
    assert Text.draw is _figure_text._ORIGINAL_DRAW  # put back after the block


# ---- The source: explicit sizes under 10 pt and relative sizes, in the chapters and the library.

SIZE = re.compile(r"""(?x)
    (?:\b(?:fontsize|labelsize|title_fontsize)\s*=\s*|["'](?:fontsize|size|labelsize)["']\s*:\s*
       |\bset_(?:font)?size\(\s*)
    (?P<value>\d+(?:\.\d+)?|["'](?:xx-small|x-small|small|smaller)["'])""")
RELATIVE_RC = re.compile(r"""["'](?:font\.size|[\w.]*(?:fontsize|labelsize|titlesize))["']\s*:\s*(?P<value>[^,}\n]+)""")


def _too_small(value: str) -> bool:
    value = value.strip().strip("\"'")
    try:
        return float(value) < SMALLEST_PT
    except ValueError:
        return value in {"xx-small", "x-small", "small", "smaller"}


def small_sizes_in(path: Path, root: Path = ROOT):
    """``file:line: text`` for each explicit font size under 10 pt (or a relative one) in ``path``."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        code = line.split("#", 1)[0]
        values = [m.group("value") for m in SIZE.finditer(code)] + [m.group("value") for m in RELATIVE_RC.finditer(code)]
        if any(_too_small(v) for v in values):
            found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_the_source_sets_no_font_size_under_10_pt():
    files = sorted((ROOT / "book").glob("*.md")) + sorted((ROOT / "src" / "mha").rglob("*.py"))
    found = [hit for path in files for hit in small_sizes_in(path)]
    assert not found, "figure text under 10 pt (the site's floor, issue 30):\n" + "\n".join(found)


def test_the_scan_bites(tmp_path):
    sample = tmp_path / "chapter.md"
    sample.write_text('ax.text(0, 0, "a", fontsize=9)\nax.legend(fontsize="small")\nax.tick_params(labelsize=8.5)\n'
                      'ax.legend(prop={"size": 7})\nmatplotlib.rcParams.update({"legend.fontsize": "x-small"})\n'
                      'ax.set_title("t", fontsize=10)\nrng.normal(size=5)  # fontsize=9 in a comment\n')
    assert [hit.split(":")[1] for hit in small_sizes_in(sample, tmp_path)] == ["1", "2", "3", "4", "5"]
