"""Heads with roles: the layer of :func:`mha.examples.cat_sat_mat` read with ``h`` heads, one row's arithmetic.

:func:`roles_explorer` draws, when the page is built, every head's map at each
``h`` with one query row framed, and that row's arithmetic in each head; a
slider picks ``h`` and a menu the row, both linked in the browser. The readings
come from :mod:`mha.head_roles`.
"""

from __future__ import annotations

import base64
import html

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.figure import Figure

from .._validate import check_index, check_positive_int, is_sequence
from ..examples import RoleExample, cat_sat_mat
from ..head_roles import read_roles, row_arithmetic
from ..plotting import book_style, text_colour
from ._common import label, num
from .frames import FramePainter, readout_row, slider_text_html

__all__ = ["roles_explorer"]

ROLE_HS = (4, 2, 1)  # left to right: the heads merge
TEXT_PT = 10  # every text of the picture: the book's smallest (issue 30)


def _head_titles(roles, h):
    """What each of ``h`` heads holds, when the roles sit one per block of the layer's own heads."""
    n = len(roles)
    if h == 1:
        return ("one head: every role's columns",)
    per = n // h
    return tuple(f"head {i + 1}: " + " + ".join(roles[i * per:(i + 1) * per]) for i in range(h))


class _RolesPainter:
    """Every head's map at one h, with one query row framed and its weights written in."""

    def __init__(self, weights, tokens, titles):
        self.weights = weights
        h, T, _ = weights.shape
        rows, cols = (1, h) if h <= 2 else (2, h // 2)
        # Cells about 32 px wide, so that a weight (".44") fits in one at 10 pt; the queries are named
        # on the left of each row of maps only.
        size = {1: (4.3, 3.9), 2: (6.6, 3.9)}.get(h, (6.6, 7.3))
        labels = [label(t) for t in tokens]
        with book_style():
            self.fig = Figure(figsize=size, dpi=96, layout="constrained")
            self.fig.get_layout_engine().set(wspace=0.06)  # a gap between maps that share their query names
            axes = np.atleast_1d(self.fig.subplots(rows, cols)).ravel()
            self.images, self.frames, self.cells = [], [], []
            for i, (ax, A, title) in enumerate(zip(axes, weights, titles)):
                image = ax.imshow(A, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
                ax.set_xticks(range(T), labels=labels, rotation=90)
                first = i % cols == 0
                ax.set_yticks(range(T), labels=labels if first else [])
                # a long title ("head 1: neighbour + same part of speech") in two lines, at the colon
                ax.set_title(label(title.replace(": ", ":\n", 1) if len(title) > 30 else title), fontsize=TEXT_PT)
                ax.set_xlabel("key", fontsize=TEXT_PT)
                if first:
                    ax.set_ylabel("query", fontsize=TEXT_PT)
                outer = ax.add_patch(matplotlib.patches.Rectangle((-0.5, -0.5), T, 1, fill=False, ec="black", lw=3))
                inner = ax.add_patch(matplotlib.patches.Rectangle((-0.5, -0.5), T, 1, fill=False, ec="white", lw=1.2))
                texts = [ax.text(s, 0, "", ha="center", va="center", fontsize=TEXT_PT) for s in range(T)]
                self.images.append(image)
                self.frames.append((outer, inner))
                self.cells.append(texts)
            self.fig.colorbar(self.images[0], ax=list(axes), shrink=0.8, label="weight")
        self.painter = FramePainter(self.fig, [p for pair in self.frames for p in pair]
                                    + [t for texts in self.cells for t in texts])

    def draw(self, row):
        """Frame query ``row`` in every map and write its weights; return PNG bytes."""
        for image, pair, texts, A in zip(self.images, self.frames, self.cells, self.weights):
            for patch in pair:
                patch.set_y(row - 0.5)
            for s, text in enumerate(texts):
                text.set_position((s, row))
                text.set_text(f"{A[row, s]:.2f}".lstrip("0"))
                text.set_color(text_colour(image.cmap(image.norm(A[row, s]))))
        return self.painter.png()


def _fmt_exp(x):
    return f"{x:,.0f}" if x >= 1000 else f"{x:.1f}" if x >= 10 else f"{x:.3f}"


def _arithmetic_table(step, title, tokens):
    """One head's row as an HTML table: one line per key, then the sum."""
    top = int(np.argmax(step.weights))
    marks = ['<tr class="mha-top">' if s == top else "<tr>" for s in range(len(tokens))]
    lines = "".join(
        f"{marks[s]}<th scope=\"row\">{html.escape(tokens[s])}</th>"
        f"<td>{num(q, 'g')}</td><td>{num(x, '.3f')}</td><td>{_fmt_exp(e)}</td><td>{w:.3f}</td></tr>"
        for s, (q, x, e, w) in enumerate(zip(step.scores, step.scaled, step.exps, step.weights)))
    return (f"<table class=\"mha-arith\"><caption>{html.escape(title)} (d<sub>k</sub> = {step.d_k})</caption>"
            "<thead><tr><th scope=\"col\">key</th><th scope=\"col\">q·k</th>"
            f"<th scope=\"col\">÷ √{step.d_k}</th><th scope=\"col\">exp</th><th scope=\"col\">weight</th></tr></thead>"
            f"<tbody>{lines}</tbody><tfoot><tr><th scope=\"row\">sum</th><td></td><td></td>"
            f"<td>{_fmt_exp(step.total)}</td><td>{step.weights.sum():.3f}</td></tr></tfoot></table>")


_ROLE_CSS = ("<style>.mha-arith{border-collapse:collapse;font-size:0.85em;margin:0 0 0.6em 0}"
             ".mha-arith caption{text-align:left;font-weight:bold;padding-bottom:0.2em}"
             # the widget's own text colour: a page theme's muted caption grey sat on the widget's
             # light card in the book's dark mode at 1.71:1
             ".mha-roles figcaption,.mha-arith caption{color:inherit}"
             ".mha-arith th,.mha-arith td{padding:0.1em 0.45em;text-align:right;border-bottom:1px solid #ccc}"
             ".mha-arith th[scope=row]{text-align:left}"
             ".mha-arith tr.mha-top{background:#E69F00;color:black;font-weight:bold}"
             ".mha-arith-grid{display:flex;flex-wrap:wrap;gap:0 1.2em}"
             ".mha-roles img{max-width:100%;height:auto}</style>")


def _roles_caption(h, row, tokens, titles, weights):
    """Text alternative of one picture: the query, and where each head's row puts most of its weight."""
    parts = []
    for title, A in zip(titles, weights):
        w = A[row]
        big = [s for s in np.argsort(-w, kind="stable") if w[s] >= 0.15][:3]
        parts.append(f"{title}: " + ", ".join(f"{tokens[s]} {w[s]:.2f}" for s in big))
    heads = "1 head" if h == 1 else f"{h} heads"
    return (f"{heads}, query row {row} “{tokens[row]}” framed in every map. Most weight: "
            + "; ".join(parts) + ".")


def _roles_page(png, caption, steps_row, titles, tokens):
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    tables = "".join(_arithmetic_table(step, title, tokens) for step, title in zip(steps_row, titles))
    return (f"<figure style=\"margin:0\"><img src=\"{src}\" alt=\"{html.escape(caption)}\">"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            f"<p>The arithmetic of row “{html.escape(tokens[steps_row[0].row])}” in each head "
            "(the key with the largest weight is shaded orange):</p>"
            f"<div class=\"mha-arith-grid\">{tables}</div>")


def _check_head_counts(hs, h_max):
    """The h slider's stops: distinct head counts, each dividing ``h_max``."""
    if not is_sequence(hs):
        raise TypeError(f"hs must be a sequence of head counts, got {hs!r:.60}")
    hs = tuple(check_positive_int(h, "hs entry") for h in hs)
    if not hs or len(set(hs)) != len(hs) or any(h_max % h for h in hs):
        raise ValueError(f"hs must be distinct head counts that divide the example's h = {h_max}, got {hs}")
    return hs


def roles_explorer(example=None, hs=ROLE_HS, *, start_h=None, start_row=1):
    """Heads with roles on the static page: pick h and a query row; see every map and the row's arithmetic.

    Everything is computed with :func:`mha.attention_steps` when the page is
    built: for each ``h`` a picture of every head's map with the chosen row
    framed, and for each head a table of that row (``q . k``, divided by
    ``sqrt(d_k)``, ``exp``, the sum, the weights). The pictures and tables sit
    in a ``Stack`` per ``h`` whose pages are ``Stack`` s per row; the h slider is
    linked to the outer stack and the row menu to every inner stack with
    ``jslink``, so both pickers work in the browser without a kernel.

    Parameters
    ----------
    example : RoleExample, optional
        Default :func:`mha.examples.cat_sat_mat`.
    hs : sequence of int
        Head counts to offer, in the slider's order (default 4, 2, 1: moving
        right merges heads); each must divide the example's ``h``, so each
        head holds whole roles.
    start_h, start_row : int
        Shown first (default: the first of ``hs``, and the second token).

    Returns
    -------
    ipywidgets.VBox
        Children: intro, h slider, row menu, the stack of stacks. DOM classes
        ``mha-sweep`` and ``mha-roles``.
    """
    example = cat_sat_mat() if example is None else example
    if not isinstance(example, RoleExample):
        raise TypeError(f"example must be a mha.examples.RoleExample, got {type(example).__name__}")
    hs = _check_head_counts(hs, example.h)
    tokens = tuple(example.tokens)
    T = len(tokens)
    start_h = hs[0] if start_h is None else start_h
    if isinstance(start_h, (bool, np.bool_)) or not isinstance(start_h, (int, np.integer)) or start_h not in hs:
        raise ValueError(f"start_h must be one of hs = {hs}, got {start_h!r}")
    start_row = check_index(start_row, "start_row", T)
    row_menu = widgets.Dropdown(options=[(f"{t}: {w}", t) for t, w in enumerate(tokens)], index=start_row,
                                description="query row", style={"description_width": "initial"})
    h_slider = widgets.SelectionSlider(options=[("1 head" if h == 1 else f"{h} heads", i) for i, h in enumerate(hs)],
                                       index=hs.index(start_h), description="heads h", continuous_update=True,
                                       style={"description_width": "initial"},
                                       layout=widgets.Layout(width="95%", max_width="30em"))
    shared = widgets.Layout()
    per_h = []
    for h in hs:
        reading = read_roles(example, h)
        titles = _head_titles(example.roles, h)
        painter = _RolesPainter(reading.weights, tokens, titles)
        pages = []
        for row in range(T):
            caption = _roles_caption(h, row, tokens, titles, reading.weights)
            pages.append(widgets.HTML(_roles_page(painter.draw(row), caption, row_arithmetic(reading.steps, row),
                                                  titles, tokens), layout=shared))
        inner = widgets.Stack(pages, selected_index=start_row, layout=shared)
        widgets.jslink((row_menu, "index"), (inner, "selected_index"))
        per_h.append(inner)
    outer = widgets.Stack(per_h, selected_index=hs.index(start_h))
    widgets.jslink((h_slider, "index"), (outer, "selected_index"))
    intro = (f"The layer of “{html.escape(' '.join(tokens))}”, the same matrices read with h heads. "
             "Move the slider right (or press the arrow keys) to merge the heads, and pick a query row "
             "from the menu: the row is "
             "framed in every map, and below the maps each head's arithmetic for that row is spelled out.")
    note = slider_text_html("heads h", [f"h = {h}" for h in hs])
    readouts = ["1 head" if h == 1 else f"{h} heads" for h in hs]
    box = widgets.VBox([widgets.HTML(_ROLE_CSS + f"<p>{intro}</p>{note}"), readout_row(h_slider, readouts), row_menu,
                        outer])
    box.add_class("mha-sweep")
    box.add_class("mha-roles")
    return box
