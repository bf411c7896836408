"""Figures, widget frames, layout shift and the theme's icons on the built site, in headless Chromium.

* Figure text stays readable: every figure (a PNG drawn at 100 dpi with text of 10 pt, about 14 px)
  is shown at 0.65 of its drawn width or more, on a phone (375 px) and on a desktop (1280 px), so
  its 10-pt text is 9 CSS px or more; a wider figure scrolls sideways in its own box
  (_ext/mha_theme.py gives each <img> its size and ``--mha-w``; _ext/static/mha-theme.css).
* Widget frames are shown at the size they were drawn: never stretched (ipywidgets' column box
  stretched chapter 09's frames 1.86 and 2.57 times, which blurred them).
* On a desktop (1280 px) every figure and widget frame fits its column: none scrolls sideways. The
  column is about 670 px, so a figure may be drawn up to about 1000 px (10 in at 100 dpi) and still
  show its 10-pt text at 9 CSS px; the four figures drawn 12 in wide before (chapter 09's grid of
  heads, 10's drift maps, 11's two toy layers) scrolled there.
* A box that scrolls sideways gets a tab stop by itself, also when a widget drawn after load
  makes it overflow (no resize event needed; _ext/static/mha-phone.js).
* Every picture has its width and height in the page, and the pages that moved most (04, 05, 07:
  0.13-0.17 before, as MathJax replaced each formula's TeX source) shift less than 0.1 (Cumulative
  Layout Shift) while they load with the CPU slowed 4x (_ext/mha_mathroom.py keeps each inline
  formula's room).
* No page scrolls sideways at 320 px (inline code may break anywhere).
"""
from __future__ import annotations

import time

import pytest

from conftest import toc_files

pytestmark = pytest.mark.browser

PHONE = (375, 812)
DESKTOP = (1280, 800)
LEAST_SCALE = 0.65          # 10-pt text (13.9 px at 100 dpi) at 9 CSS px or more
WIDEST_DRAWN = 1000         # px: 10 in at 100 dpi, the widest figure that fits the desktop column readable
# Figures that were drawn 12 in wide and scrolled sideways on a desktop: each must be on its page and fit.
ONCE_TOO_WIDE = {"book/09_real_heads.html": ["fig-rh-grid"], "book/10_removing_heads.html": ["fig-rm-drift"],
                 "book/11_induction_heads.html": ["fig-ih-toy-layer1", "fig-ih-toy-layer2"]}
PAGES = [f"{name}.html" for name in toc_files()]
WIDGET_PAGES = ["book/04_wide_or_narrow.html", "book/05_narrow_heads.html", "book/06_how_many_heads.html",
                "book/09_real_heads.html", "book/12_rank_bound.html"]

_WIDGETS_DRAWN = """() => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  return views === 0 || document.querySelectorAll('.widget-subarea .jupyter-widgets').length >= views;
}"""

_PICTURES = """async () => {
  const imgs = Array.from(document.querySelectorAll('.bd-article img'))
    .filter(i => i.checkVisibility() && i.naturalWidth > 50);
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return imgs.map(i => ({
    name: (i.getAttribute('alt') || i.getAttribute('src') || '').slice(0, 50),
    natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
    widget: !!i.closest('.jupyter-widgets'),
    sized: i.hasAttribute('width') && i.hasAttribute('height'),
    fromSite: !!i.getAttribute('src') && !i.getAttribute('src').startsWith('data:'),
  }));
}"""

_PICTURES_IN_BOXES = """() => Array.from(document.querySelectorAll('.bd-article img'))
  .filter(i => i.checkVisibility() && i.naturalWidth > 50)
  .map(i => {
    const box = i.closest('figure, div.cell_output'), shown = i.getBoundingClientRect();
    const column = document.querySelector('.bd-article').getBoundingClientRect();
    return {name: (i.getAttribute('alt') || i.getAttribute('src') || '').slice(0, 50),
            figure: (i.closest('figure[id]') || {}).id || null, widget: !!i.closest('.jupyter-widgets'),
            natural: i.naturalWidth, shown: shown.width, column: column.width,
            box: box ? box.clientWidth : null, boxScrolls: !!box && box.scrollWidth > box.clientWidth + 1,
            pokesOut: shown.right > column.right + 1};
  })"""

_SCROLL_BOXES = """() => Array.from(document.querySelectorAll(
    '.bd-article div.cell_output pre, .bd-article div.cell_output, .bd-article figure'))
  .filter(box => box.checkVisibility() && box.scrollWidth > box.clientWidth + 1)
  .map(box => ({what: box.tagName + '.' + box.className, tabindex: box.getAttribute('tabindex'),
                widget: !!box.querySelector('.jupyter-widgets')}))"""


def _visit(open_page, site_dir, path, viewport):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(path, viewport=viewport)
    page = visit.page
    page.wait_for_load_state("networkidle")
    page.wait_for_function(_WIDGETS_DRAWN, timeout=30000)
    # MathJax is loaded after the widgets (mha-mathjax.js), and mha-phone.js scans the boxes once
    # the article has been quiet for 250 ms: wait for both.
    page.wait_for_function("() => !document.querySelector('.math') || (window.MathJax && MathJax.startup"
                           " && MathJax.startup.promise)", timeout=30000)
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.wait_for_timeout(600)
    return visit


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["375px", "1280px"])
@pytest.mark.parametrize("path", PAGES)
def test_figure_text_stays_readable_and_frames_are_not_stretched(open_page, site_dir, path, viewport):
    visit = _visit(open_page, site_dir, path, viewport)
    pictures = visit.page.evaluate(_PICTURES)
    small = [f"{p['name']!r}: shown {p['shown']:.0f} px of {p['natural']} ({p['shown'] / p['natural']:.2f})"
             for p in pictures if p["shown"] < LEAST_SCALE * p["natural"] - 0.5]
    assert not small, (f"{path} at {viewport[0]} px: figures shrunk so far that 10-pt text is under "
                       f"9 CSS px: {small}")
    stretched = [f"{p['name']!r}: shown {p['shown']:.0f} px, drawn {p['natural']} px"
                 for p in pictures if p["widget"] and p["shown"] > p["natural"] + 1]
    assert not stretched, f"{path} at {viewport[0]} px: widget frames stretched (blurred): {stretched}"
    unsized = [p["name"] for p in pictures if p["fromSite"] and not p["widget"] and not p["sized"]]
    assert not unsized, f"{path}: pictures without width and height (the page moves as they load): {unsized}"
    assert visit.page.evaluate("() => document.scrollingElement.scrollWidth") <= viewport[0] + 1, (
        f"{path} at {viewport[0]} px: the page itself scrolls sideways")
    boxes = visit.page.evaluate(_SCROLL_BOXES)
    unreachable = [b["what"] for b in boxes if b["tabindex"] is None]
    assert not unreachable, f"{path} at {viewport[0]} px: boxes that scroll sideways without a tab stop: {unreachable}"


@pytest.mark.parametrize("path", WIDGET_PAGES)
def test_a_widget_box_that_overflows_gets_a_tab_stop_without_a_resize(open_page, site_dir, path):
    """mha-phone.js marks boxes when the widget manager draws into them, after load."""
    visit = _visit(open_page, site_dir, path, (320, 700))
    boxes = visit.page.evaluate(_SCROLL_BOXES)
    widget_boxes = [b for b in boxes if b["widget"]]
    assert all(b["tabindex"] == "0" for b in widget_boxes), widget_boxes


def test_the_rule_bites_a_figure_scrolls_on_a_phone(open_page, site_dir):
    """Chapter 09's layer-by-head grid is drawn about 1000 px wide: on a phone it scrolls, readable."""
    visit = _visit(open_page, site_dir, "book/09_real_heads.html", PHONE)
    pictures = [p for p in visit.page.evaluate(_PICTURES_IN_BOXES) if not p["widget"]]
    assert any(p["box"] and p["natural"] * LEAST_SCALE > p["box"] for p in pictures), \
        "no figure is wider than the phone's column at a readable size: the test checks nothing"
    assert all(p["shown"] >= LEAST_SCALE * p["natural"] - 0.5 for p in pictures)


@pytest.mark.parametrize("path", PAGES)
def test_no_figure_or_widget_frame_scrolls_sideways_on_a_desktop(open_page, site_dir, path):
    """At 1280 px every picture fits its column: drawn at most 10 in wide (1000 px) at 100 dpi."""
    visit = _visit(open_page, site_dir, path, DESKTOP)
    pictures = visit.page.evaluate(_PICTURES_IN_BOXES)
    wide = [f"{p['figure'] or p['name']!r}: drawn {p['natural']} px, shown {p['shown']:.0f} px in a box of "
            f"{p['box']} px (column {p['column']:.0f} px)" for p in pictures if p["boxScrolls"] or p["pokesOut"]]
    assert not wide, f"{path} at 1280 px: pictures that scroll sideways (draw them at most 10 in wide): {wide}"
    for name in ONCE_TOO_WIDE.get(path, []):
        found = [p for p in pictures if p["figure"] == name]
        assert len(found) == 1, f"{path}: figure {name} not found once on the page (renamed?): {len(found)}"
        assert found[0]["natural"] <= WIDEST_DRAWN, f"{path}: {name} is drawn {found[0]['natural']} px wide"


@pytest.mark.parametrize("path", PAGES)
def test_no_page_scrolls_sideways_at_320_px(open_page, site_dir, path):
    """WCAG 1.4.10 (reflow): at 320 CSS px only boxes of their own scroll, not the page."""
    visit = _visit(open_page, site_dir, path, (320, 700))
    width = visit.page.evaluate("() => document.scrollingElement.scrollWidth")
    wide = visit.page.evaluate("""() => Array.from(document.querySelectorAll('.bd-article *'))
        .filter(e => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest(
          '[data-mha-scroll], div.cell_output, figure, div.math, .table-wrapper, pre, mjx-container'))
        .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + (e.textContent || '').slice(0, 40))""")
    assert width <= 321, f"{path}: the page is {width} px wide at 320 px: {wide}"


@pytest.mark.parametrize("path", ["book/04_wide_or_narrow.html", "book/05_narrow_heads.html",
                                  "book/07_d_model.html"])
def test_pages_barely_move_while_they_load(chromium, site_server, site_dir, path):
    """Layout shift at 4x CPU slowdown: the worst pages before were 04 (0.15), 05 (0.13), 07 (0.17)."""
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    context = chromium.new_context(viewport={"width": DESKTOP[0], "height": DESKTOP[1]})
    try:
        page = context.new_page()
        page.add_init_script("""window.__cls = 0; new PerformanceObserver(list => {
            for (const e of list.getEntries()) if (!e.hadRecentInput) window.__cls += e.value;
          }).observe({type: 'layout-shift', buffered: true});""")
        cdp = context.new_cdp_session(page)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
        page.goto(site_server + path, wait_until="load")
        deadline = time.time() + 60
        while not page.evaluate(_WIDGETS_DRAWN) and time.time() < deadline:
            page.wait_for_timeout(200)
        # MathJax is loaded after the widgets (mha-mathjax.js): its formulas count too
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=60_000)
        page.evaluate("() => MathJax.startup.promise")
        page.wait_for_timeout(1500)
        shift = page.evaluate("window.__cls")
    finally:
        context.close()
    assert shift < 0.1, f"{path}: layout shift {shift:.3f} while loading at 4x CPU slowdown (goal: under 0.1)"
