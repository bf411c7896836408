"""Accessibility of the built book: alt text, captions, headings and tables.

Reads the HTML of the built site (``_build/html``, or ``$MHA_SITE_DIR``); build it first with
``python scripts/build_site.py``. Without a built site every test fails with that instruction
(the ``site_dir`` fixture of ``tests/conftest.py``). For each page of ``_toc.yml``:

* every content ``<img>`` has a meaningful alt text: not empty, not a file name, not a bare
  word such as "png" or "image", but a few words that say what the picture shows;
* widget frames (pictures that ipywidgets draws in the browser, so they are not ``<img>`` in the
  HTML) carry a tooltip, or sit in a frame with a text caption that the book's script
  ``mha-a11y.js`` copies into the picture's alt text; the browser test at the end checks that
  the rendered pictures really have it;
* every ``<figure>`` has a caption and a number ("Fig. 3"), and every matplotlib figure that a
  chapter's code draws is inside such a numbered figure (a bare plot output has no caption and
  cannot be referred to);
* heading levels never skip (an ``<h2>`` is never followed directly by an ``<h4>``);
* every table has a header row;
* every page has exactly one ``<h1>``. The book theme also prints a copy of the title in a
  ``div.onlyprint`` that is ``display: none`` on screen (a header for paper copies); screen
  readers skip it, so it is not counted.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from conftest import built_site_dir, toc_files

pytestmark = pytest.mark.book  # reads the built book

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
A11Y_SCRIPT = "mha-a11y.js"
# Alt texts that say nothing about the picture.
EMPTY_WORDS = {"", "png", "jpg", "jpeg", "svg", "gif", "image", "img", "picture", "figure", "plot",
               "graph", "chart", "output", "none", "null", "undefined", "alt"}
FILE_NAME = re.compile(r"(^|[/\\])[\w.-]+\.(png|jpe?g|gif|svg|webp|pdf)\b|^_images/|^data:", re.I)
MIN_ALT_WORDS = 4


def toc_pages() -> list[str]:
    """The pages of _toc.yml, in order, as paths of the built site (``book/x.html``)."""
    return [f"{f}.html" for f in toc_files()]


PAGES = toc_pages()


def _parse(site: Path, page: str) -> BeautifulSoup:
    path = site / page
    if not path.is_file():
        pytest.fail(f"{path} is missing: the site was built without this page of _toc.yml. "
                    "Rebuild it with: python scripts/build_site.py", pytrace=False)
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="module")
def pages(site_dir):
    """page -> parsed HTML, each page parsed once for the whole module."""
    cache: dict[str, BeautifulSoup] = {}

    def get(page: str) -> BeautifulSoup:
        if page not in cache:
            cache[page] = _parse(site_dir, page)
        return cache[page]

    return get


def article(soup: BeautifulSoup, page: str):
    """The page's main content: the book theme's <article class="bd-article">."""
    node = soup.select_one("article.bd-article")
    assert node is not None, f"{page}: no <article class='bd-article'>; did the theme change?"
    return node


def where(node) -> str:
    """A short, human-readable place for an element: its section heading and an id or source."""
    section = node.find_parent("section")
    heading = section.find(re.compile("^h[1-6]$")) if section else None
    title = heading.get_text(" ", strip=True).rstrip("#").strip() if heading else "(top)"
    ident = node.get("id") or node.get("src", "")[:60]
    return f"in section '{title[:50]}' {ident}".rstrip()


def alt_problem(alt) -> str | None:
    """Why an alt text says nothing, or None when it is meaningful."""
    if alt is None:
        return "no alt attribute"
    text = " ".join(alt.split())
    if text.lower().strip(".") in EMPTY_WORDS:
        return f"alt text {alt!r} says nothing about the picture"
    if FILE_NAME.search(text):
        return f"alt text {alt!r} is a file name"
    if len(text.split()) < MIN_ALT_WORDS:
        return f"alt text {alt!r} is too short to describe the picture (fewer than {MIN_ALT_WORDS} words)"
    return None


# ---- the checks on the static HTML --------------------------------------------------------------

@pytest.mark.parametrize("page", PAGES)
def test_every_page_has_exactly_one_h1(pages, page):
    soup = pages(page)
    h1s = [h for h in soup.find_all("h1") if not h.find_parent(class_="onlyprint")]
    texts = [h.get_text(" ", strip=True).rstrip("#").strip() for h in h1s]
    assert len(h1s) == 1, f"{page}: expected exactly one <h1>, found {len(h1s)}: {texts}"
    assert h1s[0].find_parent("article") is not None, f"{page}: the <h1> is outside the article"


@pytest.mark.parametrize("page", PAGES)
def test_heading_levels_are_not_skipped(pages, page):
    headings = article(pages(page), page).find_all(re.compile("^h[1-6]$"))
    levels = [int(h.name[1]) for h in headings]
    assert levels and levels[0] == 1, f"{page}: the content does not start with an <h1>: {levels[:3]}"
    skips = [f"<h{a}> '{headings[i].get_text(' ', strip=True)[:40]}' then "
             f"<h{b}> '{headings[i + 1].get_text(' ', strip=True)[:40]}'"
             for i, (a, b) in enumerate(zip(levels, levels[1:])) if b > a + 1]
    assert not skips, f"{page}: heading levels skipped:\n  " + "\n  ".join(skips)


@pytest.mark.parametrize("page", PAGES)
def test_images_have_meaningful_alt_text(pages, page):
    problems = []
    for img in article(pages(page), page).find_all("img"):
        problem = alt_problem(img.get("alt"))
        if problem:
            problems.append(f"{problem} ({where(img)})")
    assert not problems, f"{page}: images without a useful text alternative:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_every_figure_has_a_numbered_caption(pages, page):
    problems = []
    for fig in article(pages(page), page).find_all("figure"):
        caption = fig.find("figcaption")
        text = caption.select_one(".caption-text") if caption else None
        if caption is None or text is None or not text.get_text(strip=True):
            problems.append(f"figure without a caption ({where(fig)})")
        elif caption.select_one(".caption-number") is None:
            problems.append(f"figure without a number ({where(fig)}): give it a name "
                            "(mystnb: figure: name:) so that numfig numbers it")
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_every_plot_output_is_a_numbered_figure(pages, page):
    """A plot a code cell draws must be a numbered figure, with a caption the text can cite.

    Bare image outputs are exactly what ``plt.show()`` leaves behind when the cell has no
    ``mystnb: figure:`` metadata; they have no caption, no number and a file name as alt text.
    """
    bare = []
    for img in article(pages(page), page).select("div.cell_output img"):
        fig = img.find_parent("figure")
        if fig is None or fig.select_one("figcaption .caption-number") is None:
            bare.append(where(img))
    assert not bare, (f"{page}: plot outputs outside a numbered <figure> (add mystnb: image: alt "
                      "and figure: caption/name to the cell):\n  " + "\n  ".join(bare))


@pytest.mark.parametrize("page", PAGES)
def test_tables_have_header_rows(pages, page):
    problems = []
    for i, table in enumerate(article(pages(page), page).find_all("table"), start=1):
        head = table.find("thead")
        first_row = table.find("tr")
        header_cells = head.find_all("th") if head else []
        if not header_cells and first_row is not None:
            cells = first_row.find_all(["td", "th"])
            header_cells = cells if cells and all(c.name == "th" for c in cells) else []
        if not header_cells:
            problems.append(f"table {i} has no header row ({where(table)})")
        elif not any(c.get_text(strip=True) for c in header_cells):
            problems.append(f"table {i} has an empty header row ({where(table)})")
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


# ---- widget frames ------------------------------------------------------------------------------

def widget_models(soup: BeautifulSoup) -> dict:
    """model id -> {"model_name", "state"} of every widget saved in the page."""
    models = {}
    for script in soup.find_all("script", type=WIDGET_STATE):
        models.update(json.loads(script.string or "{}").get("state", {}))
    return models


def _text_of(model: dict) -> str:
    value = model["state"].get("value") or ""
    return " ".join(BeautifulSoup(str(value), "html.parser").get_text(" ").split())


def frame_caption(models: dict, image_id: str) -> str:
    """The text caption that shares a box with the image, or "" when there is none."""
    ref = f"IPY_MODEL_{image_id}"
    for model in models.values():
        children = model["state"].get("children") or []
        if model["model_name"].endswith("BoxModel") and ref in children:
            texts = [_text_of(models[c.removeprefix("IPY_MODEL_")]) for c in children
                     if c != ref and c.removeprefix("IPY_MODEL_") in models
                     and models[c.removeprefix("IPY_MODEL_")]["model_name"] in ("HTMLModel", "LabelModel")]
            return " ".join(t for t in texts if t)
    return ""


def loads_a11y_script(soup: BeautifulSoup) -> bool:
    return any(s.get("src", "").split("?")[0].endswith(A11Y_SCRIPT) for s in soup.find_all("script"))


WIDGET_PAGES = [p for p in PAGES if (built_site_dir() / p).is_file()
                and WIDGET_STATE in (built_site_dir() / p).read_text(encoding="utf-8")]


@pytest.mark.parametrize("page", PAGES)
def test_widget_frames_have_a_text_alternative(pages, page):
    soup = pages(page)
    models = widget_models(soup)
    script = loads_a11y_script(soup)
    problems = []
    for model_id, model in models.items():
        if model["model_name"] != "ImageModel":
            continue
        tooltip = (model["state"].get("tooltip") or "").strip()
        if tooltip:
            problem = alt_problem(tooltip)
            if problem:
                problems.append(f"widget image {model_id[:8]}, tooltip: {problem}")
            continue
        caption = frame_caption(models, model_id)
        if not caption:
            problems.append(f"widget image {model_id[:8]} has neither a tooltip nor a text caption "
                            "in its frame")
        elif alt_problem(caption):
            problems.append(f"widget image {model_id[:8]}: its caption {caption!r} is too thin "
                            "to stand in for the picture")
        elif not script:
            problems.append(f"widget image {model_id[:8]} relies on its caption, but the page does "
                            f"not load {A11Y_SCRIPT}, which copies it into the alt text")
    assert not problems, f"{page}:\n  " + "\n  ".join(problems)


_RENDERED_WIDGET_IMAGES_JS = """
async (timeoutMs) => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  const deadline = Date.now() + timeoutMs;
  let imgs = [];
  while (Date.now() < deadline) {
    imgs = Array.from(document.querySelectorAll('.jupyter-widgets img'));
    if (imgs.length && imgs.every(i => (i.getAttribute('alt') || '').trim())) break;
    await new Promise(r => setTimeout(r, 100));
  }
  return {views: views.length,
          images: imgs.map(i => ({alt: i.getAttribute('alt'), visible: i.checkVisibility()}))};
}
"""


@pytest.mark.browser
@pytest.mark.parametrize("page", WIDGET_PAGES or ["<no page with widgets>"])
def test_rendered_widget_frames_have_alt_text(open_page, page):
    """In the browser, every picture a widget draws ends up with its caption as alt text."""
    if page.startswith("<"):
        pytest.fail("no built page holds widgets; build the site first (python scripts/build_site.py)",
                    pytrace=False)
    visit = open_page(page)
    found = visit.page.evaluate(_RENDERED_WIDGET_IMAGES_JS, 15000)
    assert found["images"], f"{page}: no widget picture rendered ({found['views']} widget views)"
    missing = [i for i in found["images"] if alt_problem(i["alt"])]
    assert not missing, (f"{page}: {len(missing)} of {len(found['images'])} widget pictures have no "
                         f"useful alt text, e.g. {missing[0]}")


# ---- the detectors themselves (no site needed) ---------------------------------------------------

@pytest.mark.parametrize("alt, bad", [
    (None, True), ("", True), ("png", True), ("Image.", True),
    ("_images/3b06058.png", True), ("fig-two-heads.png", True), ("two heatmaps", True),
    ("Two 3 by 3 heatmaps of attention weights, side by side.", False),
])
def test_alt_problem_tells_useful_from_useless_alt_text(alt, bad):
    assert (alt_problem(alt) is not None) == bad


def test_frame_caption_finds_the_caption_next_to_the_picture():
    models = {
        "img": {"model_name": "ImageModel", "state": {}},
        "cap": {"model_name": "HTMLModel", "state": {"value": "<p>h = 2 heads of width 6.</p>"}},
        "box": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_img", "IPY_MODEL_cap"]}},
        "lone": {"model_name": "ImageModel", "state": {}},
    }
    assert frame_caption(models, "img") == "h = 2 heads of width 6."
    assert frame_caption(models, "lone") == ""
