"""The widgets by keyboard and screen reader, on the static page (``_ext/static/mha-a11y.js``).

* A slider's readout is read-only text with no tab stop: typing into it changes nothing, and it
  stays so after the slider moves (ipywidgets 8 makes it an editable tab stop on every update).
* Sliders are named and valued in words ("head width d k", not "d_k").
* The pickers of chapters 06 and 09 are named with their group ("layer", "head", "head width")
  and say their chosen item, in Chromium's accessibility tree; the keyboard chooses another item
  (an arrow key, or Space, an arrow key and Enter), which changes the picture and what the picker says. (They are drop-down lists, which do this
  with no script of the site, so they do the same in JupyterLab: tests/site/test_lab.py.)
* Focus on drop-downs is a ring of 3:1 or more against what is behind it.
* When the picture changes, a polite live region says the new caption; the picture's alt text
  does not repeat the caption (it is read once, as text).
* Formulas are not tab stops (MathJax's default): chapter 11's first widget is a few Tabs down.
"""
from __future__ import annotations

import pytest

from conftest import ax_controls, picker_moves_picture

pytestmark = pytest.mark.browser

SLIDER_PAGES = ["book/04_wide_or_narrow.html", "book/05_narrow_heads.html",
                "book/06_how_many_heads.html", "book/12_rank_bound.html"]
PICKERS = [("book/09_real_heads.html", ".mha-heads-minilm", ("layer", "head")),
           ("book/09_real_heads.html", ".mha-heads-smollm2", ("layer", "head")),
           ("book/06_how_many_heads.html", ".mha-lookup", ("head width",))]
MAX_TABS_TO_WIDGET = 150  # chapter 11: 434 before formulas left the tab order

_DRAWN_JS = """
async () => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const t0 = Date.now();
  while (Date.now() - t0 < 20000
         && document.querySelectorAll('.widget-subarea .jupyter-widgets').length < views.length)
    await new Promise(r => setTimeout(r, 100));
  await new Promise(r => setTimeout(r, 300));
}
"""


def _open(open_page, site_dir, path, viewport=(1280, 900)):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(path, viewport=viewport)
    visit.page.evaluate(_DRAWN_JS)
    return visit


_READOUTS_JS = """() => {
  const shown = el => el.checkVisibility();
  return {
    // ipywidgets' own readouts: hidden by the book's sliders (readout=False), read-only elsewhere
    editable: Array.from(document.querySelectorAll('.jupyter-widgets .widget-readout'))
      .filter(r => shown(r) && r.isContentEditable).length,
    // the book's readouts (mha.widgets.frames.readout_row): the text of the stop shown
    texts: Array.from(document.querySelectorAll('.jupyter-widgets .mha-slider-row'))
      .filter(shown).map(row => {
        const r = Array.from(row.querySelectorAll('.mha-readout .widget-html-content')).find(shown);
        return r ? r.innerText.trim() : null;
      }),
    editableReadouts: Array.from(document.querySelectorAll('.jupyter-widgets .mha-readout'))
      .filter(r => r.isContentEditable || r.querySelector('[contenteditable=true]')).length,
  };
}"""


@pytest.mark.parametrize("path", SLIDER_PAGES)
def test_readouts_are_read_only_text(open_page, site_dir, path):
    """Every slider shows its stop beside it as read-only text that follows the slider."""
    page = _open(open_page, site_dir, path).page
    state = page.evaluate(_READOUTS_JS)
    assert state["texts"] and all(state["texts"]), f"{path}: a slider without its readout: {state}"
    assert state["editable"] == 0 and state["editableReadouts"] == 0, f"{path}: an editable readout: {state}"
    # Typing at a readout changes nothing.
    row = page.locator(".jupyter-widgets .mha-slider-row").first
    row.scroll_into_view_if_needed()
    row.locator(".mha-readout").first.click()
    page.keyboard.type("zzz")
    page.keyboard.press("Enter")
    assert page.evaluate(_READOUTS_JS)["texts"] == state["texts"], f"{path}: typing changed a readout"
    # Moving the slider updates its readout, which stays read-only.
    handle = row.locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_timeout(200)
    if page.evaluate(_READOUTS_JS)["texts"][0] == state["texts"][0]:
        handle.press("ArrowLeft")
        handle.press("ArrowLeft")
        page.wait_for_timeout(200)
    after = page.evaluate(_READOUTS_JS)
    assert after["texts"][0] != state["texts"][0], f"{path}: the readout did not follow the slider"
    assert after["editable"] == 0 and after["editableReadouts"] == 0
    # No readout is a tab stop: Tab from the slider goes past it.
    handle.focus()
    page.keyboard.press("Tab")
    assert not page.evaluate("() => !!document.activeElement.closest('.widget-readout, .mha-readout')")


@pytest.mark.parametrize("path", SLIDER_PAGES)
def test_sliders_are_named_in_words(open_page, site_dir, path):
    page = _open(open_page, site_dir, path).page
    handles = page.evaluate("""() => Array.from(document.querySelectorAll('.jupyter-widgets .noUi-handle'))
        .filter(h => h.checkVisibility())
        .map(h => ({name: h.getAttribute('aria-label'), value: h.getAttribute('aria-valuetext')}))""")
    assert handles
    for h in handles:
        assert h["name"] and h["value"], f"{path}: a slider without a name or a value text: {h}"
        assert "_" not in h["name"] + h["value"], f"{path}: {h} would be read 'underscore'"


@pytest.mark.parametrize("path, widget, groups", PICKERS)
def test_pickers_say_their_group_and_choice(open_page, site_dir, path, widget, groups):
    """A screen reader hears "layer, 3", not "3"; an arrow key picks another item and another picture."""
    page = _open(open_page, site_dir, path).page
    box = page.locator(widget).first
    box.scroll_into_view_if_needed()
    for group in groups:
        print(f"{path} {widget} {group!r}: {ax_controls(page, box)}")
        # an arrow key on the closed list; then Space, an arrow key and Enter (the way that also
        # works in JupyterLab, whose notebook takes a closed list's arrow keys)
        for open_list in (False, True):
            move = picker_moves_picture(page, box, group, open_list=open_list)  # fails: no group or item
            before, after = move["said"]
            assert after != before, f"{path} {widget}: the {group!r} picker still says {before!r}"
            assert move["picture"][0] != move["picture"][1], \
                f"{path} {widget}: {group} {after} left the picture as it was"


_RING_JS = """
() => {
  const el = document.activeElement;
  const s = getComputedStyle(el);
  const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  let bg = [255, 255, 255];
  for (let e = el.parentElement; e; e = e.parentElement) {
    const c = rgb(getComputedStyle(e).backgroundColor);
    if (c.length >= 3 && (c.length < 4 || c[3] > 0.9)) { bg = c; break; }
  }
  const [a, b] = [lum(rgb(s.outlineColor)), lum(bg)].sort((x, y) => y - x);
  return {tag: el.tagName, style: s.outlineStyle, width: parseFloat(s.outlineWidth),
          ratio: (a + 0.05) / (b + 0.05)};
}
"""


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("path, control", [
    ("book/04_wide_or_narrow.html", ".jupyter-widgets select"),
    ("book/09_real_heads.html", ".mha-head-browser select"),
])
def test_focus_is_visible(chromium, site_server, site_dir, path, control, mode):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_init_script(f"localStorage.setItem('mode', '{mode}');"
                                f"localStorage.setItem('theme', '{mode}');")
        page = context.new_page()
        page.goto(site_server + path, wait_until="load")
        page.evaluate(_DRAWN_JS)
        target = page.locator(control).first
        # Reach it by keyboard (Shift+Tab back from the next stop), so :focus-visible applies.
        target.focus()
        page.keyboard.press("Tab")
        page.keyboard.press("Shift+Tab")
        ring = page.evaluate(_RING_JS)
    finally:
        context.close()
    assert ring["style"] != "none" and ring["width"] >= 2, f"{path}: focus on {ring['tag']} shows no ring: {ring}"
    assert ring["ratio"] >= 3, f"{path} ({mode}): focus ring at {ring['ratio']:.2f}:1, below 3:1"


@pytest.mark.parametrize("path", ["book/05_narrow_heads.html", "book/12_rank_bound.html"])
def test_new_caption_is_announced_and_alt_does_not_repeat_it(open_page, site_dir, path):
    page = _open(open_page, site_dir, path).page
    sweep = page.locator(".mha-sweep").first
    handle = sweep.locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_timeout(100)
    handle.press("ArrowLeft")
    handle.press("ArrowLeft")
    page.wait_for_timeout(500)
    facts = sweep.evaluate("""root => {
        const area = root.closest('.widget-subarea');
        const live = area && area.querySelector('.mha-live');
        const img = Array.from(root.querySelectorAll('img')).filter(i => i.checkVisibility())[0];
        const box = img.closest('.widget-vbox, .widget-box');
        const caption = box.querySelector('.widget-html, .widget-label');
        return {live: live ? live.textContent.trim() : null,
                politeness: live ? live.getAttribute('aria-live') : null,
                alt: img.getAttribute('alt'), caption: caption.textContent.replace(/\\s+/g, ' ').trim()};
    }""")
    assert facts["politeness"] == "polite", f"{path}: no polite live region: {facts}"
    assert facts["live"] == facts["caption"], f"{path}: the live region says {facts['live']!r}"
    assert facts["alt"] and facts["alt"] != facts["caption"], f"{path}: alt repeats the caption"


def test_formulas_are_not_tab_stops(open_page, site_dir):
    page = _open(open_page, site_dir, "book/12_rank_bound.html").page
    # MathJax is loaded after the widgets are drawn (mha-mathjax.js): wait for it
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30_000)
    page.evaluate("() => MathJax.startup.promise")
    math_stops = page.evaluate(
        "() => Array.from(document.querySelectorAll('mjx-container')).filter(m => m.tabIndex >= 0).length")
    assert page.locator("mjx-container").count() > 100
    assert math_stops == 0, f"{math_stops} formulas are tab stops"
    page.locator("body").focus()
    for tabs in range(1, MAX_TABS_TO_WIDGET + 1):
        page.keyboard.press("Tab")
        if page.evaluate("() => !!document.activeElement.closest('.jupyter-widgets')"):
            break
    else:
        pytest.fail(f"chapter 11's first widget is more than {MAX_TABS_TO_WIDGET} Tabs down")
