"""Every launch and repository link on the built pages points at the one repository of _config.yml.

Reads the built site (_build/html; these tests fail, not skip, without it) and _config.yml:

* every link to GitHub is well formed and goes to `repository.url` (on `repository.branch` when
  it names a branch: /blob/<branch>/, /edit/<branch>/, /tree/<branch>/);
* every Binder link is https://mybinder.org/v2/gh/<org>/<repo>/<branch> and opens JupyterLab on
  the page's own notebook edition: ?urlpath=lab/tree/notebooks/<page>.ipynb, for a chapter that
  scripts/notebook_edition.py writes;
* every chapter page has exactly one Binder link, and no page offers Jupyter Book's own Live Code
  (sphinx-thebe, thebe 0.8); every page with code cells offers the book's (_ext/mha_live.py):
  "Live Code" in the launch menu and mha-live.js, told the same repository, branch and BinderHub
  and the page's notebook edition.

Only the theme's header buttons are read: a citation may link to another project on GitHub.
"""
from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
import notebook_edition  # noqa: E402

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"]["branch"]
BINDER = CONFIG["launch_buttons"]["binderhub_url"].rstrip("/")
CHAPTERS = notebook_edition.chapter_stems()
HREF = re.compile(r"""href=["']([^"']+)["']""")


def built_pages(site: Path) -> list[Path]:
    return sorted(p for p in (site / "book").glob("*.html"))


def header_html(page: str) -> str:
    """The page's header buttons (repository, launch, download): the links the theme builds."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    header = soup.select(".bd-header-article, .btn-source-repository-button")
    return "\n".join(str(el) for el in header)


@pytest.fixture(scope="module")
def pages(site_dir):
    found = built_pages(site_dir)
    assert found, f"no pages under {site_dir / 'book'}"
    return {p.stem: header_html(p.read_text(encoding="utf-8")) for p in found}


@pytest.fixture(scope="module")
def full_pages(site_dir):
    return {p.stem: p.read_text(encoding="utf-8") for p in built_pages(site_dir)}


def test_the_repository_url_is_one_well_formed_github_repository():
    parts = urlsplit(REPO_URL)
    assert parts.scheme == "https" and parts.netloc == "github.com", REPO_URL
    assert re.fullmatch(r"/[A-Za-z0-9-]+/[A-Za-z0-9._-]+", parts.path), REPO_URL
    assert re.fullmatch(r"[A-Za-z0-9._/-]+", BRANCH), BRANCH
    assert BINDER == "https://mybinder.org"


def test_every_github_link_points_at_the_repository(pages):
    seen = 0
    for stem, html in pages.items():
        for href in HREF.findall(html):
            if "github.com" not in href:
                continue
            parts = urlsplit(href)
            assert parts.scheme == "https" and parts.netloc == "github.com", (stem, href)
            assert href == REPO_URL or href.startswith(REPO_URL + "/"), (stem, href)
            rest = href[len(REPO_URL):]
            branch_part = re.match(r"/(blob|edit|tree|raw)/([^/]+)/", rest)
            if branch_part:
                assert branch_part.group(2) == BRANCH, (stem, href)
            seen += 1
    assert seen >= len(pages), "the repository button is missing from some pages"


def test_every_binder_link_opens_the_pages_own_notebook(pages):
    org_repo = urlsplit(REPO_URL).path.strip("/")
    for stem, html in pages.items():
        links = [h.replace("&amp;", "&") for h in HREF.findall(html) if "mybinder.org" in h]
        if stem not in CHAPTERS:
            assert not links, f"{stem} is not a notebook but has a Binder link: {links}"
            continue
        assert len(links) == 1, f"{stem}: {len(links)} Binder links: {links}"
        parts = urlsplit(links[0])
        assert f"{parts.scheme}://{parts.netloc}" == BINDER, links[0]
        assert parts.path == f"/v2/gh/{org_repo}/{BRANCH}", links[0]
        query = parse_qs(parts.query)
        assert query == {"urlpath": [f"lab/tree/notebooks/{stem}.ipynb"]}, links[0]


def test_every_launch_target_is_written_by_the_notebook_edition(pages):
    chapters_with_pages = [stem for stem in CHAPTERS if stem in pages]
    assert chapters_with_pages == CHAPTERS, "a chapter of _toc.yml has no built page"
    for stem in CHAPTERS:
        assert (ROOT / "book" / f"{stem}.md").is_file()


def test_no_page_offers_sphinx_thebes_live_code(pages, full_pages):
    for stem, html in pages.items():
        assert "initThebe" not in html and "launch-thebe" not in html, stem
    for stem, html in full_pages.items():
        # sphinx-thebe's small loader stays on the page, but the thebe library is never loaded
        assert not re.search(r"<script[^>]+src=[\"'][^\"']*thebe@", html), stem
        assert "thebe-launch-button" not in html, stem


def test_every_page_with_code_offers_the_books_live_code(full_pages):
    import html as html_lib
    import json

    with_code = 0
    for stem, html in full_pages.items():
        tags = re.findall(r"<script\b[^>]*\bsrc=\"[^\"]*/mha-live\.js[^\"]*\"[^>]*>", html)
        if 'class="cell_input' not in html:
            assert not tags and "mhaLiveStart()" not in html, stem
            continue
        with_code += 1
        assert len(tags) == 1, (stem, tags)
        attrs = {k: html_lib.unescape(v) for k, v in re.findall(r'(data-[a-z-]+)="([^"]*)"', tags[0])}
        # code the page does not show (remove-cell, remove-input), keyed by the shown cell it precedes
        hidden = json.loads(attrs.pop("data-hidden-cells", "{}"))
        shown = html.count('class="cell_input')
        assert all(0 <= int(k) < shown and v and all(isinstance(x, str) for x in v)
                   for k, v in hidden.items()), (stem, list(hidden))
        assert attrs == {
            "data-binder-repo": urlsplit(REPO_URL).path.strip("/"),
            "data-binder-ref": BRANCH,
            "data-binder-url": BINDER,
            "data-notebook": f"notebooks/{stem}.ipynb",
        }, (stem, attrs)
        assert html.count('onclick="mhaLiveStart()"') == 1, stem
    assert with_code, "no built page has code cells"
