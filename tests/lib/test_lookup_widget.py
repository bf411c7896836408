"""mha.widgets.lookup: the static explorer's frames and head-width list, and the live explorer that trains on demand."""

import ipywidgets as widgets
import numpy as np
import pytest

from mha.widgets import lookup as lw
from mha import training as tr


@pytest.fixture(scope="module")
def short_runs():
    """Tiny models (a few steps): enough to draw, quick to make."""
    return {h: tr.dictionary_lookup(h, steps=3) for h in (1, 2, 4)}


def find(box, kind):
    out, todo = [], [box]
    while todo:
        w = todo.pop()
        if isinstance(w, kind):
            out.append(w)
        todo.extend(getattr(w, "children", ()))
    return out


def test_frames_have_pictures_and_captions(short_runs):
    frames = lw.lookup_frames(list(short_runs.values()))
    assert len(frames) == 3
    for png, caption in frames:
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and "test accuracy" in caption


def test_static_explorer_links_slider_and_width_list(short_runs):
    rs = list(short_runs.values())
    box = lw.lookup_explorer({"d_k = d/h": rs, "d_k fixed": rs}, start=1)
    assert "mha-lookup" in box._dom_classes and "mha-sweep" in box._dom_classes
    slider = find(box, widgets.SelectionSlider)[0]
    assert [label for label, _ in slider.options] == ["1", "2", "4"] and slider.index == 1
    # a drop-down list named "head width" (not ToggleButtons, which a screen reader hears as bare labels)
    menu = box.children[1]
    assert type(menu) is widgets.Dropdown and menu.description == "head width"
    assert [label for label, _ in menu.options] == ["d_k = d/h", "d_k fixed"] and menu.index == 0
    assert not find(box, widgets.ToggleButtons)


def test_static_explorer_refuses_mismatched_modes(short_runs):
    with pytest.raises(ValueError, match="head counts"):
        lw.lookup_explorer({"a": [short_runs[1], short_runs[2]], "b": [short_runs[2], short_runs[1]]})
    with pytest.raises(TypeError, match="LookupResult"):
        lw.lookup_frames([1, 2])


def test_live_explorer_trains_only_when_asked(monkeypatch, short_runs):
    calls = []
    real = tr.dictionary_lookup

    def counted(h, **kw):
        calls.append((h, kw["d_k"], kw["seed"]))
        return real(h, **kw)

    monkeypatch.setattr(tr, "dictionary_lookup", counted)
    box = lw.lookup_explorer_live(short_runs.values(), h=2, steps=3)
    assert "mha-lookup-live" in box._dom_classes
    image = find(box, widgets.Image)[0]
    assert calls == [] and image.value[:4] == b"\x89PNG"  # the given model, drawn without training
    slider = find(box, widgets.SelectionSlider)[0]
    slider.value = 4  # given too: still nothing trained
    assert calls == []
    menu = find(box, widgets.Dropdown)[0]
    assert menu.description == "head width" and menu.index == 0
    before = image.value
    menu.value = 4  # h = 4 with d_k = 4 is the model already given (d/h = 4)
    assert calls == []
    menu.index = 0  # back to d_k = d/h: the list still shows it (a None value would drop the index)
    assert menu.index == 0 and menu.label == "d_k = d/h" and calls == []
    menu.index = 1
    slider.value = 8  # not given: trained now, once
    assert calls == [(8, 4, 0)] and image.value != before
    slider.value = 4
    slider.value = 8  # back again: kept, not trained twice
    assert calls == [(8, 4, 0)]
    find(box, widgets.BoundedIntText)[0].value = 1
    assert calls == [(8, 4, 0), (8, 4, 1)]
    status = " ".join(w.value for w in find(box, widgets.HTML))
    assert "test accuracy" in status


def test_live_explorer_without_models_waits():
    box = lw.lookup_explorer_live(h=16, steps=2)
    assert find(box, widgets.Image)[0].value == b""
    assert any("to train a model" in w.value for w in find(box, widgets.HTML))


@pytest.mark.parametrize("kw, error, match", [
    ({"h": 3}, ValueError, "h must be one of"), ({"fixed_d_k": 0}, ValueError, "fixed_d_k"),
    ({"steps": 0}, ValueError, "steps"), ({"seed": -1}, ValueError, "seed"), ({"sample": 9}, ValueError, "sample"),
    ({"results": [1]}, TypeError, "LookupResult"),
])
def test_live_explorer_refuses_bad_input(kw, error, match):
    with pytest.raises(error, match=match):
        lw.lookup_explorer_live(**kw)


def png_rows(png):
    """A PNG's height in pixels (from its IHDR chunk)."""
    return int.from_bytes(png[20:24], "big")


def test_frames_draw_only_the_heads_a_model_has(short_runs):
    frames = lw.lookup_frames(list(short_runs.values()))
    heights = [png_rows(png) for png, _ in frames]
    assert heights[0] < heights[1] < heights[2]  # h = 1, 2, 4: one row per head, no empty rows
    painters = lw._Painters(short_runs[2].samples, 0)
    painters.draw(short_runs[2], 0, "t", "a")
    assert painters.by_h[2].image.get_array().shape == (2, 9)


def test_columns_say_what_they_are(short_runs):
    r = short_runs[1]
    labels = lw._token_labels(r.samples, 0)
    k, v = r.samples.keys[0][0], r.samples.values[0][0]
    assert labels[0] == f"key {k}\nvalue {v}" and labels[-1].startswith("query\n(keys ")
    assert "→" not in "".join(labels)
    box = lw.lookup_explorer({"d_k = d/h": list(short_runs.values())})
    intro = find(box, widgets.HTML)[-1].value
    assert "stores value 9 under key 10" in intro and "Move the slider to change h" in intro


@pytest.mark.parametrize("sample, error", [(1.5, TypeError), ("0", TypeError), (None, TypeError),
                                           (True, TypeError), (4, ValueError), (-1, ValueError)])
def test_frames_refuse_a_bad_sample(short_runs, sample, error):
    with pytest.raises(error, match="sample"):
        lw.lookup_frames([short_runs[1]], sample=sample)


def test_frames_refuse_results_scored_on_other_lookups(short_runs):
    other = tr.dictionary_lookup(1, n_keys=3, steps=2)
    with pytest.raises(ValueError, match="same test lookups"):
        lw.lookup_frames([short_runs[1], other])


@pytest.mark.parametrize("results", [None, 3, "abc", [], [None]])
def test_frames_refuse_junk_results(results):
    with pytest.raises(TypeError, match="results"):
        lw.lookup_frames(results)


@pytest.mark.parametrize("kw, error, match", [
    ({"start": 5}, ValueError, "start"), ({"start": 1.5}, TypeError, "start"), ({"start": True}, TypeError, "start"),
    ({"sample": 1.5}, TypeError, "sample"),
])
def test_static_explorer_refuses_bad_positions(short_runs, kw, error, match):
    with pytest.raises(error, match=match):
        lw.lookup_explorer({"a": list(short_runs.values())}, **kw)


@pytest.mark.parametrize("by_mode, error, match", [
    ([], TypeError, "by_mode"), (None, TypeError, "by_mode"), ({}, ValueError, "head counts"),
    ({"a": []}, TypeError, "by_mode"), ({"a": 3}, TypeError, "by_mode"),
])
def test_static_explorer_refuses_bad_modes(by_mode, error, match):
    with pytest.raises(error, match=match):
        lw.lookup_explorer(by_mode)


@pytest.mark.parametrize("kw, error", [({"sample": 1.5}, TypeError), ({"sample": True}, TypeError),
                                       ({"h": 2.0}, ValueError), ({"h": True}, ValueError)])
def test_live_explorer_refuses_bad_positions(kw, error):
    with pytest.raises(error):
        lw.lookup_explorer_live(**kw)


def _forward_by_hand(r, i):
    """Answers and query weights of result ``r`` on its sample lookup ``i``, through mha.multi_head_attention."""
    from mha import multi_head_attention

    p = {k: v.astype(np.float64) for k, v in r.params.items()}
    s, E, n = r.samples, p["E"], tr.N_SYMBOLS
    X = np.stack([E[k] + E[n + v] for k, v in zip(s.keys[i], s.values[i])]
                 + [sum(E[2 * n + n * j + k] for j, k in enumerate(s.asked_keys[i]))])
    Y, A = multi_head_attention(X, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], h=r.h)
    z = X[-1] + Y[-1]
    return np.array([(z @ p["R"][j] + p["c"][j]).argmax() for j in range(r.n_keys)]), A[:, -1]


@pytest.mark.parametrize("h, d_k", [(16, 4), (8, 4), (2, 4), (4, None)])
def test_frames_show_the_models_own_answers_also_when_d_k_is_held(h, d_k):
    # The chapter's 16 heads with d_k = 4 (test accuracy 0.999) answer one of its sample lookups wrongly:
    # one of the model's rare errors, not the widget's. The caption's answers and the drawn weights are
    # those of an independent forward pass through mha.multi_head_attention.
    r = tr.dictionary_lookup(h, d_k=d_k, steps=300)
    for i in range(tr.N_SAMPLES):
        answers, weights = _forward_by_hand(r, i)
        assert np.array_equal(answers, r.sample_answers[i])
        np.testing.assert_allclose(weights, r.sample_weights[i], atol=1e-4)
        caption = lw.lookup_frames([r], sample=i)[0][1]
        for k, a in zip(r.samples.asked_keys[i], answers):
            assert f"key {k}: answered value {a} (" in caption
