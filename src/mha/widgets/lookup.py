"""What trained heads do on the dictionary lookup, as a widget that works on the static page.

:func:`lookup_explorer` takes trained results (:mod:`mha.training`), one per
head count and per choice of ``d_k``, and draws, for one test lookup, each of
the model's ``h`` heads as one row of weights over the 8 (key, value) entries
and the query, with the entries whose keys the query names boxed, and the
model's answers. A slider picks ``h`` and a drop-down list named "head width"
picks "d_k = d/h" or "d_k fixed" (a ``<select>`` named by its ``<label>``: a
screen reader says its name and its item with no script); both are linked in
the browser (``jslink``), so the static page needs no kernel. Every picture is
drawn at build time with :class:`mha.widgets.frames.FramePainter`.
:func:`lookup_explorer_live` is the same picture with a kernel: it trains the
model you pick when you pick it.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

import ipywidgets as widgets
import numpy as np
from ipywidgets.widgets.widget_string import HTMLStyle
from matplotlib.figure import Figure

from .. import training
from .._validate import check_count, check_index, check_positive_int
from ..plotting import SEQUENTIAL, book_style
from ..training import LookupResult
from .frames import FramePainter, caption_html, readout_row

__all__ = ["lookup_explorer", "lookup_explorer_live", "lookup_frames"]

MAX_HEADS = 16
TEXT_PT = 10  # every text of the picture: the book's smallest (issue 30)


def _token_labels(sample, i):
    """Column names for test lookup ``i``: each entry's key and value, then the query and the keys it names."""
    entries = [f"key {k}\nvalue {v}" for k, v in zip(sample.keys[i], sample.values[i])]
    asked = ", ".join(str(k) for k in sample.asked_keys[i])
    return entries + [f"query\n(keys {asked})" if len(sample.asked_keys[i]) > 1 else f"query\n(key {asked})"]


class _LookupPainter:
    """One figure for every frame with ``h`` heads: h × tokens weights, the asked columns boxed, the answers."""

    def __init__(self, labels, asked, h):
        with book_style():
            # 656 px wide: nine columns named in two lines of 10-pt text each
            self.fig = Figure(figsize=(8.2, 3.0 + 0.2 * h), dpi=80, layout="constrained")
            ax = self.fig.add_subplot()
            self.image = ax.imshow(np.full((h, len(labels)), np.nan), vmin=0, vmax=1, cmap=SEQUENTIAL,
                                   aspect="auto", interpolation="nearest")
            ax.set_xticks(range(len(labels)), labels=labels, fontsize=TEXT_PT)
            ax.set_yticks(range(h), labels=[str(i + 1) for i in range(h)], fontsize=TEXT_PT)
            ax.set_ylabel("head", fontsize=TEXT_PT)
            boxes = [ax.add_patch(_box(j, h)) for j in asked]
            ax.set_xlabel("the 8 (key, value) entries of the input, then the query token\n"
                          "boxed: the entries whose keys the query names", fontsize=TEXT_PT)
            self.fig.colorbar(self.image, ax=ax, shrink=0.9, label="the query's weight")
            # Placeholder text of a frame's size (the title, then one line per answer), so that the layout
            # leaves room above the heads.
            self.title = ax.set_title("16 heads" + "\nanswer" * len(asked), fontsize=TEXT_PT, pad=4)
            self.answers = ax.annotate("", (0.0, 1.0), xycoords="axes fraction", xytext=(0, 16),
                                       textcoords="offset points", fontsize=TEXT_PT, va="bottom")
        # The boxes move with nothing, but they must be drawn over each frame's weights.
        self.painter = FramePainter(self.fig, [self.image, *boxes, self.title, self.answers])

    def draw(self, weights, title, answers):
        self.image.set_data(weights)
        self.title.set_text(title)
        self.answers.set_text(answers)
        return self.painter.png()


class _Painters:
    """One :class:`_LookupPainter` per head count, made when first needed (each draws only its h rows)."""

    def __init__(self, samples, sample):
        self.labels = _token_labels(samples, sample)
        self.asked = samples.asked[sample]
        self.by_h = {}

    def draw(self, r, sample, title, answers):
        if r.h not in self.by_h:
            self.by_h[r.h] = _LookupPainter(self.labels, self.asked, r.h)
        return self.by_h[r.h].draw(r.sample_weights[sample], title, answers)


def _box(j, rows):
    from matplotlib.patches import Rectangle
    return Rectangle((j - 0.5, -0.5), 1, rows, fill=False, ec="black", lw=2)


def _describe(r, i):
    """Title, answer lines (one per asked key) and caption of result ``r`` on sample lookup ``i``."""
    asked_keys, right = r.samples.asked_keys[i], r.samples.answers[i]
    got = r.sample_answers[i]
    answers = [f"key {k}: answered value {g} ({'right' if g == t else f'wrong, the value is {t}'})"
               for k, g, t in zip(asked_keys, got, right)]
    heads = "1 head" if r.h == 1 else f"{r.h} heads"
    title = f"{heads}, d_k = {r.d_k}, d_v = {r.d_v}: test accuracy {r.accuracy:.3f}"
    on = r.sample_attention[i]  # (h, n_keys)
    lead = ", ".join(f"head {a + 1} puts {on[a].max():.2f} on the entry of key {asked_keys[on[a].argmax()]}"
                     for a in range(min(r.h, 4)))
    more = ", ..." if r.h > 4 else ""
    caption = (f"{heads} of width d_k = {r.d_k}, trained on the lookup (test accuracy {r.accuracy:.3f}). "
               f"For the lookup shown: {lead}{more}. Answers: {'; '.join(answers)}.")
    return title, "\n".join(answers), caption


def _results(results, name="results"):
    """``results`` as a non-empty list of LookupResult that fit the picture, or a clear error."""
    if isinstance(results, (str, bytes)) or not hasattr(results, "__iter__"):
        raise TypeError(f"{name} must be a sequence of mha.training.LookupResult, got {type(results).__name__}")
    results = list(results)
    if not results or not all(isinstance(r, LookupResult) for r in results):
        raise TypeError(f"{name} must be a non-empty sequence of mha.training.LookupResult")
    for r in results:
        if isinstance(r.h, bool) or not isinstance(r.h, (int, np.integer)) or not 1 <= r.h <= MAX_HEADS:
            raise ValueError(f"{name}: the picture has room for 1 to {MAX_HEADS} heads, got h={r.h!r}")
        if np.shape(r.sample_weights)[1:2] != (r.h,):
            raise ValueError(f"{name}: the result with h={r.h} holds sample weights of shape "
                             f"{np.shape(r.sample_weights)}, not one row per head")
    first = results[0].samples
    for r in results[1:]:
        if not all(np.array_equal(getattr(r.samples, a), getattr(first, a)) for a in ("keys", "values", "asked")):
            raise ValueError(f"{name} must all be scored on the same test lookups (the same n_keys); "
                             f"got n_keys {sorted({x.n_keys for x in results})}")
    return results


def lookup_frames(results, sample=0):
    """One (PNG, caption) per result, all showing test lookup ``sample``.

    Parameters
    ----------
    results : sequence of LookupResult
        At most 16 heads each; all scored on the same test lookups (the same ``n_keys``).
    sample : int
        Which of the results' sample lookups to show.

    Raises
    ------
    TypeError
        If ``results`` is not a sequence of LookupResult, or ``sample`` is not an integer.
    ValueError
        If a result has more than 16 heads, the results were scored on different lookups, or
        ``sample`` is out of range.
    """
    results = _results(results)
    first = results[0]
    sample = check_index(sample, "sample", first.samples.keys.shape[0])
    painters = _Painters(first.samples, sample)
    frames = []
    for r in results:
        title, answer, caption = _describe(r, sample)
        frames.append((painters.draw(r, sample, title, answer), caption))
    return frames


def _stack(frames):
    shared = widgets.Layout()
    image_layout = widgets.Layout(max_width="100%", height="auto")
    style = HTMLStyle(font_size="0.9em")
    return widgets.Stack([widgets.VBox([widgets.Image(value=png, format="png", layout=image_layout),
                                        widgets.HTML(caption_html(text), style=style, layout=shared)],
                                       layout=shared) for png, text in frames], selected_index=0)


def lookup_explorer(by_mode, *, start=1, sample=0, dom_class="mha-lookup"):
    """An ``h`` slider and a "head width" list (``d_k``) over trained lookups, linked in the browser.

    Parameters
    ----------
    by_mode : dict of str to sequence of LookupResult
        The items of the "head width" list (e.g. ``"d_k = d/h"``, ``"d_k fixed"``), each with one
        result per head count, the same head counts in the same order.
    start : int
        The slider position shown first.
    sample : int
        The sample lookup shown.

    Returns
    -------
    ipywidgets.VBox
        With classes ``mha-sweep`` and ``dom_class``.
    """
    if not isinstance(by_mode, Mapping):
        raise TypeError("by_mode must be a dict of head-width label -> sequence of LookupResult, "
                        f"got {type(by_mode).__name__}")
    modes = {str(k): _results(v, f"by_mode[{k!r}]") for k, v in by_mode.items()}
    counts = {tuple(r.h for r in rs) for rs in modes.values()}
    if not modes or len(counts) != 1:
        raise ValueError("every mode needs one result per head count, the same head counts in the same order")
    hs = counts.pop()
    start = check_index(start, "start", len(hs))
    frames = lookup_frames([r for rs in modes.values() for r in rs], sample)  # one figure paints every frame
    stacks = [_stack(frames[i:i + len(hs)]) for i in range(0, len(frames), len(hs))]
    slider = widgets.SelectionSlider(options=[(str(h), i) for i, h in enumerate(hs)], index=start,
                                     description="heads h", continuous_update=True,
                                     style={"description_width": "initial"},
                                     layout=widgets.Layout(width="95%", max_width="40em"))
    width_menu = widgets.Dropdown(options=[(name, i) for i, name in enumerate(modes)], index=0,
                                  description="head width", style={"description_width": "initial"})
    for stack in stacks:
        stack.selected_index = start
        widgets.jslink((slider, "index"), (stack, "selected_index"))
    outer = widgets.Stack(stacks, selected_index=0)
    widgets.jslink((width_menu, "index"), (outer, "selected_index"))
    d = modes[next(iter(modes))][0].d
    intro = (f"One test lookup, read by models of width d = {d} with h heads. Each row is one head's weights "
             "over the 8 (key, value) entries of the input and the query token itself; a column such as "
             "\u201ckey 10, value 9\u201d is the entry that stores value 9 under key 10. The boxed columns are "
             "the entries whose keys the query names. Move the slider to change h; pick a head width to keep "
             f"d<sub>k</sub> = d/h or to hold it fixed ({html.escape(', '.join(modes))}).")
    box = widgets.VBox([widgets.HTML(f"<p>{intro}</p>"), width_menu, readout_row(slider, [str(h) for h in hs]),
                        outer])
    box.add_class("mha-sweep")
    box.add_class(str(dom_class))
    return box


def lookup_explorer_live(results=(), *, h=2, fixed_d_k=4, seed=0, steps=1500, sample=0):
    """The lookup explorer computed live (needs a kernel): models are trained when you ask for them.

    Pick ``h``, the head width ("d_k = d/h" or held at ``fixed_d_k``) and a seed; a
    model not trained yet is trained then (:func:`mha.training.dictionary_lookup`,
    a few seconds) and kept, so going back to it is instant. Nothing is trained
    when the widget is made.

    Parameters
    ----------
    results : iterable of LookupResult
        Models already trained (for example a chapter's), shown without
        training again when their ``h``, ``d_k``, seed and steps match.
    h : int
        The head count shown first (one of 1, 2, 4, 8, 16).
    fixed_d_k : int
        The key width of the "head width" list's second item.
    seed, steps : int
        The seed shown first, and the Adam steps of every model trained here.
    sample : int
        Which test lookup to show.

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-lookup-live``.
    """
    counts = (1, 2, 4, 8, 16)
    if isinstance(h, bool) or not isinstance(h, (int, np.integer)) or h not in counts:
        raise ValueError(f"h must be one of {counts}, got {h!r}")
    fixed_d_k = check_positive_int(fixed_d_k, "fixed_d_k")
    steps = check_positive_int(steps, "steps")
    seed = check_count(seed, "seed")
    sample = check_index(sample, "sample", training.N_SAMPLES)
    trained = {}
    for r in results:
        if not isinstance(r, LookupResult):
            raise TypeError("results must hold mha.training.LookupResult objects")
        if r.n_keys == 2 and r.d == 16:
            trained[(r.h, r.d_k, r.seed, r.steps)] = r
    test = training.test_set(2)
    samples = training.LookupBatch(test.keys[:training.N_SAMPLES], test.values[:training.N_SAMPLES],
                                   test.asked[:training.N_SAMPLES])
    painters = _Painters(samples, sample)
    slider = widgets.SelectionSlider(options=[(str(c), c) for c in counts], value=h, description="heads h",
                                     continuous_update=False, style={"description_width": "initial"},
                                     layout=widgets.Layout(width="95%", max_width="40em"))
    # The first item's value is 0, not None: a selection widget whose value becomes None loses its
    # index, so picking "d_k = d/h" again would leave the list showing no item.
    width_menu = widgets.Dropdown(options=[("d_k = d/h", 0), (f"d_k fixed ({fixed_d_k})", fixed_d_k)],
                                  description="head width", style={"description_width": "initial"})
    seed_box = widgets.BoundedIntText(value=seed, min=0, max=10_000, description="seed")
    status, caption = widgets.HTML(), widgets.HTML()
    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))

    def key():
        d_k = width_menu.value or 16 // slider.value  # 0: d_k = d/h
        return slider.value, d_k, seed_box.value, steps

    def show(_=None):
        h_now, d_k, s, n = key()
        if (h_now, d_k, s, n) not in trained:
            status.value = f"<p>Training h = {h_now}, d_k = {d_k}, seed {s} ({n} steps)...</p>"
            trained[(h_now, d_k, s, n)] = training.dictionary_lookup(h_now, d_k=d_k, seed=s, steps=n)
        r = trained[(h_now, d_k, s, n)]
        title, answer, text = _describe(r, sample)
        image.value = painters.draw(r, sample, title, answer)
        caption.value = caption_html(text)
        status.value = f"<p>{len(trained)} model(s) trained so far; this one: test accuracy {r.accuracy:.3f}.</p>"

    for control in (slider, width_menu, seed_box):
        control.observe(show, names="value")
    if key() in trained:
        show()
    else:
        status.value = "<p>Move the slider, pick a head width or change the seed to train a model.</p>"
    intro = ("One test lookup, read by a model trained on demand. Each row is one head's weights over the 8 "
             "(key, value) entries of the input and the query token; the boxed columns are the entries whose "
             "keys the query names.")
    box = widgets.VBox([widgets.HTML(f"<p>{intro}</p>"), width_menu, readout_row(slider), seed_box, status, image,
                        caption])
    box.add_class("mha-lookup-live")
    return box
