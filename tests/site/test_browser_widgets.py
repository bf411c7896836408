"""The sweep widgets on the built pages, in headless Chromium with everything off the site blocked.

On each chapter page that places a sweep (found by its DOM class), every sweep must:
  * render from the embedded widget state (no kernel),
  * show another picture, caption and slider readout when its slider moves with the keyboard,
    and the first picture again when it moves back,
  * carry a text alternative next to the picture (a caption that changes with it) and a label
    on the slider,
and the page must make no request off the site and log no console or page error.

Fixtures (site_dir, open_page, slider_moves_picture) live in tests/conftest.py; set
MHA_SITE_DIR to test another built site.
"""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

# Where the chapters place the sweeps and explorers (mha.widgets). Chapter 9's head
# browsers have two pickers, not a slider: tests/site/test_browser_head_browser.py drives them.
WIDGET_PAGES = {
    "book/04_wide_or_narrow.html": ("mha-roles",),
    "book/06_how_many_heads.html": ("mha-lookup",),
    "book/05_narrow_heads.html": ("mha-q-sweep",),
    "book/12_rank_bound.html": ("mha-dk-sweep", "mha-floor"),
}
CASES = [(page, dom_class) for page, classes in WIDGET_PAGES.items() for dom_class in classes]

# The sweep's text: the slider's label, and the caption under the visible picture.
_VISIBLE_TEXT_JS = """
(root) => {
  const label = root.querySelector('.widget-slider .widget-label, .widget-hslider .widget-label');
  const captions = Array.from(root.querySelectorAll('.widget-html-content'))
    .filter(c => c.checkVisibility() && c.closest('.widget-box') !== root);
  return {text: root.innerText, caption: captions.length ? captions[captions.length - 1].innerText : null,
          label: label ? label.textContent.trim() : null};
}
"""


def _open_sweeps(open_page, site_dir, path, dom_class):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(path)
    sweeps = visit.page.locator(f".{dom_class}")
    sweeps.first.wait_for(state="visible", timeout=20_000)  # drawn by the widget manager
    return visit, sweeps


@pytest.mark.parametrize("path, dom_class", CASES)
def test_keyboard_moves_each_sweep_and_its_picture(open_page, site_dir, slider_moves_picture,
                                                   path, dom_class):
    visit, sweeps = _open_sweeps(open_page, site_dir, path, dom_class)
    page = visit.page
    assert sweeps.count() >= 1, f"no .{dom_class} on {path}"
    for i in range(sweeps.count()):
        sweep = sweeps.nth(i)
        sweep.scroll_into_view_if_needed()
        before = sweep.evaluate(_VISIBLE_TEXT_JS)
        assert before["label"], f"{path} .{dom_class} #{i}: the slider has no label"
        assert before["caption"] and len(before["caption"]) > 20, f"{path}: picture without a caption"

        forward = slider_moves_picture(page, sweep, key="ArrowRight")
        assert forward.picture_changed, f"{path} .{dom_class} #{i}: picture frozen ({forward})"
        assert forward.value_after != forward.value_before
        after = sweep.evaluate(_VISIBLE_TEXT_JS)
        assert after["text"] != before["text"] and after["caption"] != before["caption"]

        back = slider_moves_picture(page, sweep, key="ArrowLeft")
        assert back.picture_changed and back.digest_after == forward.digest_before
        assert back.value_after == forward.value_before
    assert not visit.offsite, f"{path}: requests off the site: {visit.offsite}"
    assert not visit.console_errors and not visit.page_errors, \
        f"{path}: {visit.console_errors + visit.page_errors}"


@pytest.mark.parametrize("path, dom_class", CASES)
def test_end_key_reaches_the_last_frame(open_page, site_dir, path, dom_class):
    """Home and End jump to the first and last stops; each shows its own picture."""
    visit, sweeps = _open_sweeps(open_page, site_dir, path, dom_class)
    sweep = sweeps.first
    sweep.scroll_into_view_if_needed()
    handle = sweep.locator(".noUi-handle").first
    seen = []
    for key in ("Home", "End"):
        handle.focus()
        handle.press(key)
        visit.page.wait_for_timeout(300)
        seen.append((handle.get_attribute("aria-valuenow"), sweep.evaluate(_VISIBLE_TEXT_JS)["caption"]))
    (first_value, first_caption), (last_value, last_caption) = seen
    assert first_value != last_value and first_caption != last_caption
    assert not visit.console_errors and not visit.page_errors


# ---- screen readers: each slider's handle has a name and says its stop as text, not its index ----
_ARIA_JS = """
(root) => {
  const handle = Array.from(root.querySelectorAll('.noUi-handle[role=slider]')).find(h => h.checkVisibility());
  if (!handle) return null;
  const slider = handle.closest('.widget-slider, .widget-hslider');
  const label = slider && slider.querySelector('.widget-label');
  // the read-only readout beside the slider (mha.widgets.frames.readout_row), else ipywidgets' own
  const row = handle.closest('.mha-slider-row');
  const readout = (row && Array.from(row.querySelectorAll('.mha-readout .widget-html-content'))
                     .find(r => r.checkVisibility())) || (slider && slider.querySelector('.widget-readout'));
  const note = handle.closest('.mha-sweep') && handle.closest('.mha-sweep').querySelector('.mha-slider-text');
  return {name: handle.getAttribute('aria-label'), text: handle.getAttribute('aria-valuetext'),
          now: handle.getAttribute('aria-valuenow'), label: label ? label.textContent.trim() : null,
          readout: readout ? readout.textContent.trim() : null,
          values: note ? JSON.parse(note.getAttribute('data-values')) : null};
}
"""


def _spoken(text):
    """What mha-a11y.js gives screen readers: a subscript as a word ("d_k" -> "d k")."""
    return re.sub(r"([A-Za-z])_([A-Za-z0-9]+)", r"\1 \2", text)


def _aria(sweep, page, before=None, timeout_ms=3000):
    state, waited = sweep.evaluate(_ARIA_JS), 0
    while before is not None and state == before and waited < timeout_ms:
        page.wait_for_timeout(100)
        waited += 100
        state = sweep.evaluate(_ARIA_JS)
    return state


@pytest.mark.parametrize("path, dom_class", CASES)
def test_each_slider_has_a_name_and_says_its_stop_as_text(open_page, site_dir, path, dom_class):
    visit, sweeps = _open_sweeps(open_page, site_dir, path, dom_class)
    sweep = sweeps.first
    sweep.scroll_into_view_if_needed()
    for key in (None, "ArrowRight"):
        before = _aria(sweep, visit.page)
        if key:
            sweep.locator(".noUi-handle").first.focus()
            sweep.locator(".noUi-handle").first.press(key)
        state = _aria(sweep, visit.page, before if key else None)
        assert state, f"{path} .{dom_class}: no slider handle"
        # named after its label, read as words: "head width d k" for the label "head width d_k"
        assert state["name"] and state["name"] == _spoken(state["label"] or state["name"]), state
        index = round(float(state["now"]))
        expected = state["values"][index] if state["values"] else state["readout"]
        assert state["text"] == _spoken(expected), state  # the stop as text, not the bare index
    assert not visit.console_errors and not visit.page_errors


# ---- chapter 4's roles widget: an h slider and a query-row menu, both linked in the browser ----
_ROLES_STATE_JS = """
async (root) => {
  const img = Array.from(root.querySelectorAll('img')).find(i => i.checkVisibility());
  if (!img) return null;
  if (!img.complete) await new Promise(r => { img.onload = img.onerror = r; });
  const buf = await (await fetch(img.src)).arrayBuffer();
  const h = await crypto.subtle.digest('SHA-256', buf);
  const tables = Array.from(root.querySelectorAll('table.mha-arith')).filter(t => t.checkVisibility());
  return {digest: Array.from(new Uint8Array(h)).map(b => b.toString(16).padStart(2, '0')).join(''),
          alt: (img.closest('figure').querySelector('figcaption') || img).textContent, tables: tables.length, text: tables.map(t => t.innerText).join('|')};
}
"""


def _roles_state(widget, page, before=None, timeout_ms=5000):
    """The visible picture and tables; waits until they differ from ``before`` (if given)."""
    state = widget.evaluate(_ROLES_STATE_JS)
    waited = 0
    while before is not None and state == before and waited < timeout_ms:
        page.wait_for_timeout(100)
        waited += 100
        state = widget.evaluate(_ROLES_STATE_JS)
    return state


def test_roles_widget_h_slider_and_row_menu_work_without_a_kernel(open_page, site_dir):
    path = "book/04_wide_or_narrow.html"
    visit, widgets = _open_sweeps(open_page, site_dir, path, "mha-roles")
    page, widget = visit.page, widgets.first
    widget.scroll_into_view_if_needed()
    start = _roles_state(widget, page)
    assert start and start["tables"] == 4 and "4 heads" in start["alt"] and "“cat”" in start["alt"]

    menu = widget.locator("select")
    assert menu.count() == 1 and widget.get_by_label("query row").count() == 1  # the menu has a name
    menu.focus()
    menu.select_option(label="7: .")
    row8 = _roles_state(widget, page, start)
    assert row8["digest"] != start["digest"] and row8["tables"] == 4 and "“.”" in row8["alt"]

    handle = widget.locator(".noUi-handle").first
    handle.focus()
    handle.press("End")  # 1 head: the row chosen in the menu stays chosen
    one = _roles_state(widget, page, row8)
    assert one["tables"] == 1 and "1 head" in one["alt"] and "“.”" in one["alt"]

    menu.select_option(label="1: cat")
    one_cat = _roles_state(widget, page, one)
    assert one_cat["tables"] == 1 and "“cat”" in one_cat["alt"] and one_cat["digest"] != one["digest"]
    handle.focus()
    handle.press("Home")
    back = _roles_state(widget, page, one_cat)
    assert back == start  # 4 heads and "cat" again: the first picture and tables
    assert not visit.offsite and not visit.console_errors and not visit.page_errors, \
        visit.console_errors + visit.page_errors
