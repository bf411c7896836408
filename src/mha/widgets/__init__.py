"""The book's widgets: sweeps and explorers that work on the static site and in a kernel.

This package is the book's UI: the only part of :mod:`mha`, with
:mod:`mha.plotting`, that imports matplotlib or ipywidgets. The mathematics
lives in the topic modules; a widget only draws it and links its controls.

* :func:`q_sweep` (:mod:`~mha.widgets.query_sweep`) -- the smallest head
  (``d_k = 1``): one query scalar ``q`` sets a whole row of weights.
* :func:`h_sweep`, :func:`h_sweep_widths` (:mod:`~mha.widgets.split_sweep`) --
  which columns of ``Q``, ``K`` and ``V`` each of ``h`` heads receives, the
  wrong reshape next to the right split, and each head's attention map.
* :func:`dk_sweep` (:mod:`~mha.widgets.width_sweep`) -- the best pattern a head
  of width ``d_k`` reaches for a target, the error left, and the singular
  values of its scores.
* :func:`roles_explorer` (:mod:`~mha.widgets.roles`) -- the heads of a layer
  with readable roles, merged as ``h`` falls, with one row's arithmetic.
* :func:`floor_explorer` (:mod:`~mha.widgets.floor`) -- for a target and its
  length, the error of the best head at every ``d_k`` beside the spectrum that
  predicts where it vanishes.
* :func:`lookup_explorer` (:mod:`~mha.widgets.lookup`) -- what heads trained
  on the dictionary lookup attend to, for each ``h`` and choice of ``d_k``.
* :func:`head_browser` (:mod:`~mha.widgets.browser`) -- a layer picker and a
  head picker over every attention map of a real model.

How they work without a kernel: every frame is drawn once, when the page is
built, as a PNG. The frames sit in a ``Stack`` and the slider is linked to the
stack in the browser (``jslink``), so moving the slider on the static page
shows another frame with no Python behind it. In a live kernel the same
widgets work, and the ``*_live`` versions (:func:`q_sweep_live`,
:func:`h_sweep_live`, :func:`dk_sweep_live`, :func:`floor_explorer_live`,
:func:`lookup_explorer_live`) take free input and recompute on every change.

The frame stack and its painter, the building blocks of every widget here,
are :mod:`mha.widgets.frames`.
"""

from .browser import head_browser
from .floor import floor_explorer, floor_explorer_live
from .lookup import lookup_explorer, lookup_explorer_live
from .query_sweep import q_sweep, q_sweep_live
from .roles import roles_explorer
from .split_sweep import h_sweep, h_sweep_live, h_sweep_widths
from .width_sweep import dk_sweep, dk_sweep_live

__all__ = ["dk_sweep", "dk_sweep_live", "floor_explorer", "floor_explorer_live", "h_sweep", "h_sweep_live",
           "h_sweep_widths", "head_browser", "lookup_explorer", "lookup_explorer_live", "q_sweep", "q_sweep_live",
           "roles_explorer"]
