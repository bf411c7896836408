r"""A head browser for the static page: pick a layer and a head, see that head's attention map.

Like BertViz's head view, but every picture is drawn when the book is built,
so the page needs no kernel. Two pickers (one for the layer, one for the head)
are linked in the browser with ``jslink``: the layer picker chooses one of ``L``
stacks, the head picker chooses the same head in every stack. The pickers are
drop-down lists: each is a ``<select>`` named by its ``<label>``, so a screen
reader says "layer, 3" on the page and in JupyterLab alike, with no script of
the site. Each picture has a caption that says what it shows, with the head's
measures:

* next-token mass :math:`\frac{1}{T-1}\sum_t a_{t,t+1}` (an encoder) or
  previous-token mass (a causal model, whose queries cannot see the next token),
* mass on the first position, and
* entropy, the mean over the rows of :math:`-\sum_s a_{t,s}\ln a_{t,s}`, in nats.

Shapes: ``L`` layers, ``h`` heads, ``T`` positions.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from ipywidgets.widgets.widget_string import HTMLStyle

from .._validate import as_float_array, check_flag, check_index, check_labels, check_ndim, check_text
from ..heads import next_token_mass, position_mass, previous_token_mass
from ..stats import head_entropy
from .frames import caption_html, heatmap_frames

__all__ = ["head_captions", "head_browser"]


def head_captions(A, *, causal, first="the first token", layer_labels=None):
    """One caption per head of ``A`` (L, h, T, T), in reading order (layer by layer).

    Each says the layer, the head, the neighbour mass (next token, or previous
    token when ``causal``), the mass on position 0 (called ``first``), and the
    entropy against its largest possible value (:math:`\\ln T`, or for a causal map
    the mean of :math:`\\ln(t+1)` over the queries). ``layer_labels``
    (default ``0 .. L-1``) names the layers, for a browser that shows only some of them.
    """
    A = as_float_array(A, "A")
    check_ndim(A, "A", 4, "(L, h, T, T)", exact=True)
    L, h, T, _ = A.shape
    causal = check_flag(causal, "causal")
    first = check_text(first, "first")
    names = _layer_names(layer_labels, L)
    neighbour = previous_token_mass(A) if causal else next_token_mass(A)  # (L, h)
    which = "previous" if causal else "next"
    on_first = position_mass(A, 0)  # (L, h)
    entropy = head_entropy(A)  # (L, h)
    if causal:  # query t sees t + 1 keys: an even spread over them gives ln(t + 1)
        top = f"at most {np.log(np.arange(1, T + 1)).mean():.2f}, when each query spreads evenly over the keys it sees"
    else:
        top = f"at most {np.log(T):.2f}, for an even spread over all {T} tokens"
    return [f"Layer {names[l]}, head {i}: mean weight on the {which} token {neighbour[l, i]:.2f}, on {first} "
            f"{on_first[l, i]:.2f}; entropy {entropy[l, i]:.2f} nats ({top})." for l, i in np.ndindex(L, h)]


def _layer_names(layer_labels, L):
    names = [str(l) for l in range(L)] if layer_labels is None else \
        check_labels(layer_labels, "layer_labels", numbers_too=True)
    if len(names) != L:
        raise ValueError(f"layer_labels must name each of the L={L} layers of A, got {len(names)} names")
    return names


def head_browser(A, tokens, *, causal, intro="Attention maps: pick a layer and a head.",
                 dom_class="mha-head-browser", start=(0, 0), first="the first token", layer_labels=None,
                 figsize=(4.6, 4.2), dpi=70):
    """The browser: a layer picker, a head picker, and the chosen head's map with its caption.

    Both pickers are drop-down lists named "layer" and "head": their name and chosen item reach
    a screen reader from the browser itself, and the arrow keys step through the items.

    Parameters
    ----------
    A : array_like, shape (L, h, T, T)
        Every head's attention weights on one text.
    tokens : sequence of str
        The ``T`` token labels.
    causal : bool
        A causal model: the captions give the previous-token mass instead of the next-token mass.
    intro : str
        HTML shown above the pickers.
    dom_class : str
        A CSS class for the whole box (the tests find the browser by it). Give each browser on
        a page its own; the default adds nothing to ``mha-head-browser``, which every browser has.
    start : (int, int)
        The (layer, head) shown first.
    first : str
        What the captions call position 0, e.g. ``"[CLS]"``.
    layer_labels : sequence, optional
        The layers' names in the layer picker and in the captions (default ``0 .. L-1``), when ``A`` holds
        only some of a model's layers.
    figsize, dpi :
        Size of each picture.

    Returns
    -------
    ipywidgets.VBox
        Children: the intro, the two pickers (``Dropdown``), and a Stack of ``L`` Stacks of ``h`` frames.
        Carries the classes ``mha-head-browser`` and ``dom_class``.

    Examples
    --------
    >>> A = np.full((1, 2, 3, 3), 1 / 3)  # (L, h, T, T): one layer, two heads, three tokens
    >>> box = head_browser(A, ["a", "b", "c"], causal=True, figsize=(1.5, 1.5), dpi=20)
    >>> box.children[0].value
    '<p>Attention maps: pick a layer and a head.</p>'
    >>> [(picker.description, picker.options) for picker in box.children[1:3]]
    [('layer', (('0', 0),)), ('head', (('0', 0), ('1', 1)))]
    """
    A = as_float_array(A, "A")
    check_ndim(A, "A", 4, "(L, h, T, T)", exact=True)
    L, h, T, _ = A.shape
    labels = check_labels(tokens, "tokens", numbers_too=True, chars_ok=True)
    if len(labels) != T:
        raise ValueError(f"tokens must name the T={T} positions of A {A.shape}, got {len(labels)} tokens")
    if not isinstance(start, (tuple, list)) or len(start) != 2:
        raise TypeError(f"start must be a (layer, head) pair of integers, got {start!r:.60}")
    l0, i0 = check_index(start[0], "start's layer", L), check_index(start[1], "start's head", h)
    intro = check_text(intro, "intro")
    names = _layer_names(layer_labels, L)
    captions = head_captions(A, causal=causal, first=check_text(first, "first"), layer_labels=names)
    pngs = heatmap_frames(A.reshape(L * h, T, T), labels, labels,
                          titles=[f"layer {names[l]}, head {i}" for l, i in np.ndindex(L, h)], figsize=figsize,
                          dpi=dpi)
    shared = widgets.Layout()  # one layout model for every frame box and caption
    image_layout = widgets.Layout(max_width="100%", height="auto")
    caption_style = HTMLStyle(font_size="0.9em")
    frames = [widgets.VBox([widgets.Image(value=png, format="png", layout=image_layout),
                            widgets.HTML(caption_html(text), style=caption_style, layout=shared)], layout=shared)
              for png, text in zip(pngs, captions)]
    layer_stacks = [widgets.Stack(frames[l * h:(l + 1) * h], selected_index=i0, layout=shared) for l in range(L)]
    stack = widgets.Stack(layer_stacks, selected_index=l0, layout=shared)
    # Drop-down lists, not ToggleButtons: ipywidgets 8 ties a Dropdown's description to its <select>
    # (<label for>), so the list is named "layer" and its chosen item is its value for a screen
    # reader, with no script; its toggle buttons carry no group name and no pressed state.
    style = {"description_width": "initial"}
    layer_picker = widgets.Dropdown(options=[(name, l) for l, name in enumerate(names)], index=l0,
                                    description="layer", style=style)
    head_picker = widgets.Dropdown(options=[(str(i), i) for i in range(h)], index=i0, description="head",
                                   style=style)
    widgets.jslink((layer_picker, "index"), (stack, "selected_index"))
    for inner in layer_stacks:
        widgets.jslink((head_picker, "index"), (inner, "selected_index"))
    box = widgets.VBox([widgets.HTML(f"<p>{intro}</p>"), layer_picker, head_picker, stack])
    box.add_class("mha-head-browser")
    box.add_class(check_text(dom_class, "dom_class"))
    return box
