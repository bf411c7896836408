"""Every page of the built site, in headless Chromium, with everything off the site blocked.

For each HTML page of _build/html (run the build first; these tests fail, not skip, without it):
  * no request leaves the local server (off-site requests are aborted and recorded),
  * no request fails (no 404 for a font, a MathJax component, a widget asset ...),
  * no console error and no uncaught page error,
  * MathJax has typeset every math element and no raw TeX is left in the text outside code,
  * every <img> has loaded (naturalWidth > 0),
  * pages with widgets render every widget view,
  * a widget that holds a slider and a picture changes the picture when the slider moves
    (the IntSlider -> jslink -> Stack of Image pattern; a picture that stays frozen on the
    static page is a bug).

Fixtures (site_dir, open_page, slider_moves_picture, ...) live in tests/conftest.py.
Set MHA_SITE_DIR to test another built site, MHA_BROWSER_SCREENSHOTS=<dir> to keep screenshots.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

# Build outputs that are not pages.
_NOT_PAGES = {"_static", "_sources", "_images", "_downloads", "_panels_static", ".doctrees"}


def discover_pages(site: Path) -> list[str]:
    if not (site / "index.html").is_file():
        return []
    pages = []
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site)
        if rel.parts[0] in _NOT_PAGES:
            continue
        pages.append(rel.as_posix())
    return pages


def built_site_dir() -> Path:  # same rule as conftest.site_dir
    root = Path(__file__).resolve().parents[2]
    return Path(os.environ.get("MHA_SITE_DIR", root / "_build" / "html")).resolve()


# A missing site still yields one test, which fails in the site_dir fixture with a clear message.
PAGES = discover_pages(built_site_dir()) or ["<site not built>"]

# Raw TeX that MathJax should have turned into math.
RAW_TEX = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{|\\end\{|\\[A-Za-z]+")

_META_REFRESH = re.compile(
    r"""<meta\s+http-equiv=["']refresh["']\s+content=["']\d+;\s*url=([^"']+)["']""", re.I)

_WAIT_FOR_MATHJAX_JS = """
async () => {
  const mathNodes = document.querySelectorAll('.math, mjx-container');
  if (!mathNodes.length) return {math: 0};
  // MathJax is loaded once the page's widgets are drawn (_ext/static/mha-mathjax.js): wait for it.
  for (let i = 0; i < 300 && !(window.MathJax && MathJax.startup && MathJax.startup.promise); i++)
    await new Promise(r => setTimeout(r, 100));
  const MJ = window.MathJax;
  if (!MJ || !MJ.startup || !MJ.startup.promise) return {math: mathNodes.length, missing: true};
  await MJ.startup.promise;
  if (MJ.typesetPromise) await MJ.typesetPromise();
  const untypeset = Array.from(document.querySelectorAll('span.math, div.math'))
    .filter(el => !el.querySelector('mjx-container'))
    .map(el => el.textContent.slice(0, 80));
  const errors = Array.from(document.querySelectorAll('mjx-merror, [data-mjx-error]'))
    .map(el => el.getAttribute('data-mjx-error') || el.textContent.slice(0, 80));
  return {math: mathNodes.length, untypeset, errors,
          version: MJ.version, typeset: document.querySelectorAll('mjx-container').length};
}
"""

# Text of the main content, leaving out code, scripts and widget state.
_PROSE_TEXT_JS = """
() => {
  const root = document.querySelector('#main-content, main, article') || document.body;
  const skip = 'pre, code, kbd, samp, script, style, textarea, .highlight, .cell_input';
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const bits = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (el && el.closest(skip)) continue;
    bits.push(n.nodeValue);
  }
  return bits.join(' ');
}
"""

_IMAGES_JS = """
async () => {
  const imgs = Array.from(document.images);
  await Promise.all(imgs.map(img => {
    if (img.loading === 'lazy') img.loading = 'eager';
    if (img.complete) return null;
    return new Promise(r => {
      img.addEventListener('load', r, {once: true});
      img.addEventListener('error', r, {once: true});
      setTimeout(r, 15000);
    });
  }));
  return {count: imgs.length,
          broken: imgs.filter(i => !(i.complete && i.naturalWidth > 0))
                      .map(i => (i.currentSrc || i.src || i.outerHTML).slice(0, 160))};
}
"""

_OFFSITE_HINTS_JS = """
() => Array.from(document.querySelectorAll(
    'link[rel~="preconnect"], link[rel~="dns-prefetch"], link[rel~="prefetch"], '
    + 'link[rel~="preload"], link[rel~="modulepreload"]'))
  .map(l => l.href).filter(h => h && !h.startsWith(location.origin + '/'))
"""

_VIEW_TAGS = 'script[type="application/vnd.jupyter.widget-view+json"]'

_WIDGETS_RENDERED_JS = """
(n) => {
  const areas = document.querySelectorAll('.widget-subarea');
  const rendered = Array.from(areas).filter(
    a => a.querySelector('.jupyter-widgets, [class*="widget-"]'));
  return rendered.length >= n;
}
"""

# Widget roots that hold both a slider and a picture.
_SLIDER_PICTURE_ROOTS = ".widget-subarea:has(.noUi-handle):has(img)"


def _screenshot(visit, name: str) -> None:
    folder = os.environ.get("MHA_BROWSER_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        visit.page.screenshot(path=str(Path(folder) / (name.replace("/", "__") + ".png")),
                              full_page=True)


def _visit(open_page, site_dir: Path, path: str):
    visit = open_page(path)
    page = visit.page
    # A redirect page (index.html) must lead to a local page; check the page it lands on.
    m = _META_REFRESH.search((site_dir / path).read_text(encoding="utf-8", errors="replace"))
    if m:
        target = m.group(1)
        assert "://" not in target and not target.startswith("//"), \
            f"{path} redirects off the site: {target}"
        page.wait_for_url(lambda url: not url.endswith(path), timeout=10_000)
        page.wait_for_load_state("load")
    return visit


@pytest.mark.parametrize("path", PAGES)
def test_page_is_self_contained_and_renders(open_page, site_dir, path):
    visit = _visit(open_page, site_dir, path)
    page = visit.page
    problems = []

    # Math: MathJax loaded, everything typeset, no TeX errors.
    math = page.evaluate(_WAIT_FOR_MATHJAX_JS)
    if math.get("missing"):
        problems.append(f"page has {math['math']} math elements but MathJax did not start")
    else:
        if math.get("untypeset"):
            problems.append(f"math left untypeset: {math['untypeset'][:5]}")
        if math.get("errors"):
            problems.append(f"MathJax errors: {math['errors'][:5]}")

    # Widgets: every view rendered.
    n_views = page.locator(_VIEW_TAGS).count()
    if n_views:
        try:
            page.wait_for_function(_WIDGETS_RENDERED_JS, arg=n_views, timeout=20_000)
        except Exception:  # playwright TimeoutError
            rendered = page.locator(".widget-subarea").count()
            problems.append(f"{n_views} widget views on the page, {rendered} rendered")

    # Images: all loaded.
    imgs = page.evaluate(_IMAGES_JS)
    if imgs["broken"]:
        problems.append(f"{len(imgs['broken'])}/{imgs['count']} images did not load: "
                        f"{imgs['broken'][:5]}")

    # Let late requests (web fonts picked per glyph, icon fonts) happen before judging them.
    page.evaluate("() => document.fonts.ready.then(() => true)")
    page.wait_for_load_state("networkidle")

    # Hints that make the browser connect off the site without a request event.
    hints = page.evaluate(_OFFSITE_HINTS_JS)
    if hints:
        problems.append(f"resource hints off the site: {hints}")

    # No raw TeX in the prose.
    text = page.evaluate(_PROSE_TEXT_JS)
    raw = sorted({text[max(0, m.start() - 30):m.end() + 30].replace("\n", " ")
                  for m in RAW_TEX.finditer(text)})
    if raw:
        problems.append(f"raw TeX visible in the text: {raw[:5]}")

    if visit.offsite:
        problems.append(f"requests off the site: {visit.offsite}")
    if visit.failed:
        problems.append(f"failed requests: {visit.failed}")
    if visit.console_errors:
        problems.append(f"console errors: {visit.console_errors}")
    if visit.page_errors:
        problems.append(f"page errors: {visit.page_errors}")

    _screenshot(visit, path)
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", PAGES)
def test_sliders_move_their_pictures(open_page, site_dir, slider_moves_picture, path):
    """Each widget with a slider and a picture shows another picture when the slider moves."""
    html = (site_dir / path).read_text(encoding="utf-8", errors="replace")
    if "application/vnd.jupyter.widget-view+json" not in html:
        return  # no widgets on this page: nothing to move
    visit = _visit(open_page, site_dir, path)
    page = visit.page
    n_views = page.locator(_VIEW_TAGS).count()
    try:
        page.wait_for_function(_WIDGETS_RENDERED_JS, arg=n_views, timeout=20_000)
    except Exception:  # playwright TimeoutError
        pytest.fail(f"{path}: widgets did not render ({visit.offsite or visit.console_errors})")
    roots = page.locator(_SLIDER_PICTURE_ROOTS)
    frozen = []
    for i in range(roots.count()):
        root = roots.nth(i)
        root.scroll_into_view_if_needed()
        move = slider_moves_picture(page, root)
        if not move.picture_changed:
            frozen.append(f"widget #{i}: slider {move.value_before} -> {move.value_after}, "
                          f"picture unchanged")
    assert not frozen, f"{path}: " + "; ".join(frozen)
    assert not visit.offsite, f"{path}: requests off the site: {visit.offsite}"
    assert not (visit.console_errors or visit.page_errors), \
        f"{path}: {visit.console_errors + visit.page_errors}"
