"""axe-core (WCAG 2.1 A and AA) finds nothing on any page of the book, in light and dark mode.

axe-core's own script comes from the PyPI package ``axe-playwright-python`` (requirements-test.txt:
it ships ``axe.min.js``, axe-core 4.12.1); the test injects it into the page it opens, so the site
itself never loads it, and nothing is fetched from a CDN. The rules run are those tagged wcag2a,
wcag2aa, wcag21a and wcag21aa, plus label-content-name-mismatch (WCAG 2.5.3, which this axe
version runs only when asked). Widgets are drawn and MathJax has finished before axe runs.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import toc_files

pytestmark = pytest.mark.browser

PAGES = [f"{name}.html" for name in toc_files()]
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def axe_source() -> str:
    try:
        import axe_playwright_python
    except ImportError:
        pytest.fail("axe-playwright-python is missing: pip install -r requirements-test.txt",
                    pytrace=False)
    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")


_READY_JS = """
async () => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const t0 = Date.now();
  while (views.length && Date.now() - t0 < 20000
         && document.querySelectorAll('.widget-subarea .jupyter-widgets').length < views.length)
    await new Promise(r => setTimeout(r, 100));
  // MathJax is loaded after the widgets (mha-mathjax.js): wait for it, so axe sees the formulas.
  if (document.querySelector('.math')) {
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() - t0 < 30000)
      await new Promise(r => setTimeout(r, 100));
    const MJ = window.MathJax;
    if (MJ && MJ.startup && MJ.startup.promise) await MJ.startup.promise;
  }
  await new Promise(r => setTimeout(r, 500));
}
"""

_AXE_JS = """
async (tags) => {
  const result = await axe.run(document, {
    runOnly: {type: 'tag', values: tags},
    rules: {'label-content-name-mismatch': {enabled: true}},
    resultTypes: ['violations'],
  });
  return result.violations.flatMap(v => v.nodes.map(n =>
    `${v.id}: ${n.target.join(' ')} ${n.html.slice(0, 140)} (${(n.failureSummary || '').slice(0, 160)})`));
}
"""


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("path", PAGES)
def test_axe_finds_no_violation(chromium, site_server, site_dir, path, mode):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    try:
        context.route("**/*", lambda r: r.continue_() if r.request.url.startswith(
            (site_server, "data:", "blob:")) else r.abort("blockedbyclient"))
        context.add_init_script(f"localStorage.setItem('mode', '{mode}');"
                                f"localStorage.setItem('theme', '{mode}');")
        page = context.new_page()
        page.goto(site_server + path, wait_until="load")
        assert page.evaluate("document.documentElement.dataset.theme") == mode
        page.evaluate(_READY_JS)
        page.add_script_tag(content=axe_source())
        found = page.evaluate(_AXE_JS, TAGS)
    finally:
        context.close()
    assert not found, f"{path} ({mode} mode): {len(found)} axe violations:\n  " + "\n  ".join(found[:20])
