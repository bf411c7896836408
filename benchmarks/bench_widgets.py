"""Benchmark of the three sweep widgets (issue 3): build time, page weight, live update time.

For each widget it prints
  * frames: pictures precomputed for the static page,
  * build s: seconds to build the widget with all its frames (fits included, fit cache cleared),
             the median of a few builds,
  * page KB: bytes the widget adds to the page, i.e. the JSON of its embedded widget state
             (ipywidgets.embed.embed_data on the widget's own models), and the PNG bytes inside it,
  * stored KB: the same state with every key kept, default values included, as the built page
             stores it (the notebook's saved widget state keeps them all),
  * live ms: median time of one live update (compute + render) over 50 updates of the widget's
             live version (q_sweep_live, h_sweep_live, dk_sweep_live) in this process, without the
             browser or kernel round trip; the h row of the worked example uses a random layer of
             the same size (d = 4, three tokens).
Targets from the issue: build <= 1.5 s, page <= 1 MB per widget, live update <= 50 ms median.

A last row builds chapter 9's head browser (a layer picker and a head picker over every head of
all-MiniLM-L6-v2 on the map sentence, mha.widgets.head_browser), when the weights package is installed.

Run:  .venv/bin/python benchmarks/bench_widgets.py
"""
from __future__ import annotations

import json
import os
import statistics
import time

import numpy as np
from ipywidgets.embed import dependency_state, embed_data
from ipywidgets.widgets.widget import _instances
from ipywidgets.widgets.widget_link import Link

import mha
from mha import rank, widgets

BUILDS = 3
UPDATES = 50


def _descendants(box):
    """The widget and every widget inside it (children of boxes and stacks)."""
    found, todo = [], [box]
    while todo:
        w = todo.pop()
        found.append(w)
        todo.extend(getattr(w, "children", ()))
    return found


def frame_images(box):
    """PNG bytes of every frame the widget holds (a sweep's Stack, or a browser's Stack of Stacks)."""
    import ipywidgets

    return [w.value for w in _descendants(box) if isinstance(w, ipywidgets.Image)]


def page_bytes(box, *, drop_defaults=True):
    """Embedded state of the widget's models plus the jslinks that tie its controls to its frames."""
    inside = {id(w) for w in _descendants(box)}
    links = [w for w in list(_instances.values()) if isinstance(w, Link)
             and (id(w.source[0]) in inside or id(w.target[0]) in inside)]
    data = embed_data(views=[box], state=dependency_state([box, *links], drop_defaults=drop_defaults),
                      drop_defaults=drop_defaults)
    return len(json.dumps(data["manager_state"])) + len(json.dumps(data["view_specs"]))


def build_seconds(make):
    times = []
    for _ in range(BUILDS):
        rank.clear_fit_cache()
        start = time.perf_counter()
        box = make()
        times.append(time.perf_counter() - start)
    return statistics.median(times), box


def live_ms(set_value, values):
    times = []
    for v in values:
        start = time.perf_counter()
        set_value(v)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def live_q():
    box = mha.widgets.q_sweep_live()
    q = box.children[2]
    return live_ms(lambda v: setattr(q, "value", float(v)), np.linspace(-4.9, 4.9, UPDATES))


def live_h(d=12, tokens=("the", "cat", "sat", "down")):
    box = widgets.h_sweep_live(d=d, tokens=tokens)
    h = box.children[3].children[0]  # the slider, beside its readout
    stops = list(h.options)
    return live_ms(lambda i: setattr(h, "value", stops[i % len(stops)]), range(1, UPDATES + 1))


def live_dk(n):
    box = widgets.dk_sweep_live(n=n)
    d_k = box.children[2]
    return live_ms(lambda i: setattr(d_k, "value", 1 + i % n), range(1, UPDATES + 1))


def cold_target_seconds(n):
    """A typed target in dk_sweep_live: every d_k is fitted afresh before the first picture."""
    box = widgets.dk_sweep_live(n=n)
    table = box.children[1]
    A = rank.target_random(n, seed=7)
    rank.clear_fit_cache()
    start = time.perf_counter()
    table.value = "\n".join(" ".join(f"{v:.4f}" for v in row) for row in A)
    return time.perf_counter() - start


def real_heads_browser():
    """Chapter 9's MiniLM head browser: a layer picker and a head picker over every head (None without its weights)."""
    from mha.widgets import head_browser
    from mha.models import minilm
    from mha.models._files import WeightsError
    from mha.models.texts import MAP_SENTENCE
    try:
        encoder = minilm.load()
    except WeightsError:  # the weights package is not installed
        return None
    run = encoder.run(MAP_SENTENCE)
    tokens, A = run.batch.tokens[0], run.attention(0)  # (L, h, T, T)

    def make():
        return head_browser(A, tokens, causal=False, first="[CLS]", start=(0, 2), dpi=80,
                            intro="Attention maps.", dom_class="mha-real-heads")
    return make


def main():
    # Warm up imports, fonts and NumPy once, so the first row does not pay for them.
    widgets.dk_sweep(n=3)
    cases = [
        ("q_sweep()", widgets.q_sweep, live_q),
        ("h_sweep(d=12)", widgets.h_sweep, live_h),
        ("h_sweep(layer=i_love_llms())", lambda: widgets.h_sweep(layer=mha.examples.i_love_llms()),
         lambda: live_h(4, ("I", "love", "LLMs"))),
        ("dk_sweep(n=4)", lambda: widgets.dk_sweep(n=4), lambda: live_dk(4)),
        ("dk_sweep(n=6)", lambda: widgets.dk_sweep(n=6), lambda: live_dk(6)),
    ]
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} (other work slows every figure)")
    real = real_heads_browser()
    if real is not None:
        cases.append(("chapter 9 head browser", real, lambda: float("nan")))
    head = (f"{'widget':30s} {'frames':>6s} {'build s':>8s} {'page KB':>8s} {'stored KB':>9s} {'PNG KB':>7s} "
            f"{'max PNG KB':>10s} {'live ms':>8s}")
    print(head)
    print("-" * len(head))
    for name, make, live in cases:
        seconds, box = build_seconds(make)
        pngs = frame_images(box)
        print(f"{name:30s} {len(pngs):6d} {seconds:8.2f} {page_bytes(box) / 1e3:8.0f} "
              f"{page_bytes(box, drop_defaults=False) / 1e3:9.0f} "
              f"{sum(map(len, pngs)) / 1e3:7.0f} {max(map(len, pngs)) / 1e3:10.1f} {live():8.1f}")
    for n in (4, 6):
        print(f"dk_sweep_live(n={n}): a new typed target (fits for every d_k, then the picture): "
              f"{cold_target_seconds(n):.2f} s")
    print("targets: build <= 1.5 s, page <= 1000 KB per widget, live update <= 50 ms (median)")


if __name__ == "__main__":
    main()
