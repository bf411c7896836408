"""Plotting helpers shared by the chapters.

One look for every figure: an opaque white background (readable in the
theme's light and dark modes), colour-blind-safe colours (viridis for
weights, the Okabe-Ito palette for categories), labelled axes and tokens.
"""

from __future__ import annotations

import contextlib

import matplotlib
import matplotlib.axes
import matplotlib.pyplot as plt
import numpy as np

from ._validate import as_float_array, check_flag, check_labels, check_ndim, check_number

__all__ = ["OKABE_ITO", "SEQUENTIAL", "DIVERGING", "use_book_style", "book_style", "heatmap", "text_colour",
           "contrast_ratio", "escape_math", "as_rgba", "check_cmap", "check_format"]

#: Okabe & Ito's palette, distinguishable with every common colour-vision deficiency.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
#: Colormap for weights and other non-negative quantities.
SEQUENTIAL = "viridis"
#: Colormap for signed quantities (centre at zero).
DIVERGING = "PuOr"

_STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.prop_cycle": matplotlib.cycler(color=OKABE_ITO),
    "image.cmap": SEQUENTIAL,
    "figure.constrained_layout.use": True,
}


def use_book_style():
    """Apply the book's matplotlib settings (white background, safe colours)."""
    matplotlib.rcParams.update(_STYLE)


@contextlib.contextmanager
def book_style():
    """The book's matplotlib settings inside a ``with`` block; the caller's settings come back after."""
    with matplotlib.rc_context():
        use_book_style()
        yield


def escape_math(text) -> str:
    r"""``text`` as a string that matplotlib draws literally: every ``$`` escaped as ``\$``.

    Matplotlib reads a pair of ``$`` as the start and end of a formula, and an
    unfinished formula (``"$x^$"``) stops the drawing with a parse error. Token
    names are data, never formulas, so every label built from them goes
    through here.

    >>> escape_math("$5 a $x^$")
    '\\$5 a \\$x^\\$'
    """
    return str(text).replace("$", r"\$")


def heatmap(A, row_labels, col_labels, *, ax=None, title=None, vmin=0.0, vmax=1.0,
            cmap=SEQUENTIAL, fmt="{:.2f}", annotate=True,
            xlabel="key (attended to)", ylabel="query (attending)", colorbar=False):
    """Draw a labelled matrix, each cell annotated with its value (at 10 pt, the book's smallest text).

    Parameters
    ----------
    A : array_like, shape (n_rows, n_cols)
        Finite numbers; NaN marks a cell that is not shown (drawn in the colour map's
        "bad" colour, with no annotation), e.g. a masked score.
    row_labels, col_labels : sequence of str
        Token (or other) names for the rows and columns.
    ax : matplotlib Axes, optional
        Drawn into a new figure if omitted.
    vmin, vmax : float or None
        Colour range; ``None`` takes the data's range.
    fmt : str
        Format of the annotations.

    Returns
    -------
    matplotlib.image.AxesImage
    """
    try:
        hidden = np.isnan(np.asarray(A, dtype=float))  # NaN marks a cell not shown (drawn in the cmap's "bad" colour)
    except (TypeError, ValueError, OverflowError):
        hidden = False  # as_float_array below says what is wrong
    A = as_float_array(np.where(hidden, 0.0, A) if np.any(hidden) else A, "A")
    check_ndim(A, "A", 2, "(n_rows, n_cols)", exact=True)
    A = np.where(hidden, np.nan, A)
    row_labels = check_labels(row_labels, "row_labels", numbers_too=True, chars_ok=True)
    col_labels = check_labels(col_labels, "col_labels", numbers_too=True, chars_ok=True)
    if len(row_labels) != A.shape[0] or len(col_labels) != A.shape[1]:
        raise ValueError(
            f"labels do not match A's shape {A.shape}: {len(row_labels)} row labels, "
            f"{len(col_labels)} column labels"
        )
    vmin, vmax = (None if v is None else check_number(v, name) for v, name in ((vmin, "vmin"), (vmax, "vmax")))
    if vmin is not None and vmax is not None and not vmin < vmax:
        raise ValueError(f"vmin must be below vmax, got vmin={vmin} and vmax={vmax}")
    check_cmap(cmap)
    annotate, colorbar = check_flag(annotate, "annotate"), check_flag(colorbar, "colorbar")
    if annotate:
        check_format(fmt)
    for text, name in ((title, "title"), (xlabel, "xlabel"), (ylabel, "ylabel")):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{name} must be text or None, got {text!r:.60} of type {type(text).__name__}")
    if ax is not None and not isinstance(ax, matplotlib.axes.Axes):
        raise TypeError(f"ax must be a matplotlib Axes (or None for a new figure), got {type(ax).__name__}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * A.shape[1] + 1.6, 0.5 * A.shape[0] + 1.2))
    im = ax.imshow(A, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
    ax.set_xticks(range(A.shape[1]), labels=[escape_math(t) for t in col_labels])
    ax.set_yticks(range(A.shape[0]), labels=[escape_math(t) for t in row_labels])
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if annotate:
        for (r, c), value in np.ndenumerate(A):
            if np.isnan(value):
                continue
            colour = text_colour(im.cmap(im.norm(value)))
            ax.text(c, r, fmt.format(value), ha="center", va="center", color=colour, fontsize=10)
    if colorbar:
        ax.figure.colorbar(im, ax=ax, shrink=0.8)
    return im


def check_cmap(cmap, name: str = "cmap"):
    """Raise a clear error unless ``cmap`` names a matplotlib colormap (or is one)."""
    if isinstance(cmap, matplotlib.colors.Colormap):
        return cmap
    if not isinstance(cmap, str) or cmap not in matplotlib.colormaps:
        raise ValueError(f"{name} must be a matplotlib colormap or its name (such as {SEQUENTIAL!r}), got {cmap!r:.60}")
    return cmap


def check_format(fmt, name: str = "fmt"):
    """Raise a clear error unless ``fmt`` is a format string for one number, such as ``"{:.2f}"``."""
    if not isinstance(fmt, str):
        raise TypeError(f"{name} must be a format string such as '{{:.2f}}', got {fmt!r:.60} of type {type(fmt).__name__}")
    try:
        fmt.format(0.5)
    except (ValueError, IndexError, KeyError, AttributeError, TypeError) as err:
        raise ValueError(f"{name}={fmt!r:.60} cannot format a number ({err}); write it like '{{:.2f}}'") from None
    return fmt


def as_rgba(colour, name: str = "colour") -> tuple:
    """``colour`` as an RGBA tuple, from anything matplotlib reads (``"white"``, ``"#0072B2"``, a tuple), or ``ValueError``."""
    try:
        return matplotlib.colors.to_rgba(colour)
    except (ValueError, TypeError):
        raise ValueError(f"{name} must be a colour matplotlib reads (a name such as 'white', '#0072B2', or an "
                         f"RGB(A) tuple of numbers from 0 to 1), got {colour!r:.60}") from None


def _luminance(rgba) -> float:
    """Relative luminance of an sRGB colour (WCAG 2), from 0 (black) to 1 (white)."""
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(fg, bg) -> float:
    """WCAG 2 contrast ratio of two colours, ``(L_light + 0.05) / (L_dark + 0.05)``, from 1 to 21.

    Colours are anything matplotlib reads (``"white"``, ``"#0072B2"``, an RGBA tuple).

    >>> round(contrast_ratio("black", "white"), 1)
    21.0
    """
    light, dark = sorted((_luminance(as_rgba(c, name)) for c, name in ((fg, "fg"), (bg, "bg"))), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def text_colour(background) -> str:
    """Black or white, whichever contrasts more with a cell of colour ``background``.

    Uses the relative luminance L of WCAG 2: black text wins when L > 0.179, where both
    contrast ratios, (L + 0.05) / 0.05 and 1.05 / (L + 0.05), are equal. The ratio of the
    winner is therefore never below 0.229 / 0.05 = 4.58, above WCAG's 4.5 for normal text,
    whatever the background.

    >>> text_colour((1.0, 1.0, 0.0, 1.0)), text_colour((0.27, 0.0, 0.33, 1.0)), text_colour("#0072B2")
    ('black', 'white', 'white')
    """
    return "black" if _luminance(as_rgba(background, "background")) > 0.179 else "white"
