"""When and how MathJax draws the formulas, in headless Chromium (issue 30, "fast on a phone-class CPU").

* MathJax is loaded only once every widget of the page is drawn (_ext/static/mha-mathjax.js waits
  for window.mhaWidgetsDrawn, from mha-widgets-early.js): loading it and drawing every formula first
  kept chapter 12's widgets away for 10-12 s with the CPU slowed 4x (benchmarks/bench_pages.py).
* On a page without widgets it is loaded at once.
* Until MathJax draws them, inline formulas keep their room with their TeX source hidden
  (_ext/mha_mathroom.py, mha-theme.css), so the text does not jump; then every formula is drawn.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

# Notes, at the moment MathJax's <script> enters the page, whether every widget view is drawn.
_WATCH = """(() => {
  window.__mathjax = null;
  new MutationObserver((records, observer) => {
    for (const r of records) for (const n of r.addedNodes) {
      if (n.tagName === 'SCRIPT' && /tex-mml-chtml\\.js/.test(n.src || '')) {
        const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
        const drawn = Array.from(views).filter(v => {
          const area = v.previousElementSibling;
          return area && area.classList.contains('widget-subarea') && area.firstElementChild;
        }).length;
        const spans = Array.from(document.querySelectorAll('.bd-article span.math[style*="--tex-w"]'))
          .filter(e => e.checkVisibility());  // not those in a closed drop-down
        const room = spans.map(e => e.getBoundingClientRect().width);
        window.__mathjax = {views: views.length, drawn, spans: spans.length,
          narrow: room.filter(w => w < 4).length,
          shown: spans.filter(e => getComputedStyle(e).color !== 'rgba(0, 0, 0, 0)').length};
        observer.disconnect();
      }
    }
  }).observe(document, {childList: true, subtree: true});
})();"""

_STARTED = "() => window.MathJax && MathJax.startup && MathJax.startup.promise && window.__mathjax"


def _open(chromium, site_server, site_dir, path, width=1280):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    context = chromium.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    page.add_init_script(_WATCH)
    page.goto(site_server + path, wait_until="load")
    page.wait_for_function(_STARTED, timeout=30_000)
    page.evaluate("() => MathJax.startup.promise")
    return context, page


@pytest.mark.parametrize("path", ["book/04_wide_or_narrow.html", "book/09_real_heads.html",
                                  "book/12_rank_bound.html"])
def test_mathjax_comes_after_the_widgets(chromium, site_server, site_dir, path):
    context, page = _open(chromium, site_server, site_dir, path)
    try:
        seen = page.evaluate("window.__mathjax")
        static = page.locator('script[src*="tex-mml-chtml.js"]').count()
    finally:
        context.close()
    assert seen["views"] > 0, f"{path}: no widget on the page: the test checks nothing"
    assert seen["drawn"] == seen["views"], \
        f"{path}: MathJax was loaded when {seen['drawn']} of {seen['views']} widgets were drawn"
    assert static == 1, f"{path}: {static} MathJax scripts on the page"


def test_mathjax_loads_at_once_without_widgets(chromium, site_server, site_dir):
    context, page = _open(chromium, site_server, site_dir, "book/08_costs.html")
    try:
        seen = page.evaluate("window.__mathjax")
        drawn = page.locator("span.math mjx-container").count()
    finally:
        context.close()
    assert seen["views"] == 0
    assert drawn > 0, "chapter 08's formulas were not drawn"


def test_formulas_keep_their_room_until_drawn_and_then_are_all_drawn(chromium, site_server, site_dir):
    context, page = _open(chromium, site_server, site_dir, "book/12_rank_bound.html")
    try:
        seen = page.evaluate("window.__mathjax")
        page.evaluate("() => MathJax.typesetPromise()")
        left = page.locator("span.math:not(:has(mjx-container)), div.math:not(:has(mjx-container))").count()
        errors = page.locator("mjx-merror").count()
    finally:
        context.close()
    assert seen["spans"] > 100, f"only {seen['spans']} inline formulas with a room: is mha_mathroom on?"
    assert seen["narrow"] == 0, f"{seen['narrow']} formulas had no room before MathJax drew them"
    assert seen["shown"] == 0, f"{seen['shown']} formulas showed their TeX source before MathJax"
    assert left == 0 and errors == 0, f"{left} formulas not drawn, {errors} MathJax errors"


def test_widget_labels_can_ask_mathjax_2s_queue_before_and_after_it_loads(chromium, site_server, site_dir):
    """ipywidgets 8 calls MathJax.Hub.Queue for each label whenever window.MathJax exists (it throws
    without Hub): mha-mathjax.js answers it on MathJax's settings and on the MathJax 3 object."""
    context, page = _open(chromium, site_server, site_dir, "book/05_narrow_heads.html")
    try:
        drawn = page.evaluate("""async () => {
            const el = document.createElement('span');
            el.textContent = '\\\\(x^2\\\\)';
            document.querySelector('.bd-article').appendChild(el);
            MathJax.Hub.Queue(['Typeset', MathJax.Hub, el]);
            for (let i = 0; i < 100 && !el.querySelector('mjx-container'); i++)
                await new Promise(r => setTimeout(r, 100));
            return !!el.querySelector('mjx-container');
        }""")
        settings_hub = page.evaluate("() => typeof (MathJax.config.Hub || {}).Queue")
    finally:
        context.close()
    assert drawn, "a label typeset through MathJax.Hub.Queue after MathJax loaded was not drawn"
    assert settings_hub == "function", "the widgets, drawn before MathJax, had no MathJax.Hub.Queue"
