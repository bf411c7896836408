"""The book: the strict build of the site passed, and it executed every chapter afresh.

The site is built once per test run by ``scripts/build_site.py`` (``make test`` runs it before
pytest); these tests read its report instead of building a second time. (Each chapter runs once
more on its own, as the reader runs it: the notebook edition, in tests/site/test_notebooks.py.)
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import toc_files

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "_build" / "build-report.json"

pytestmark = pytest.mark.book


CHAPTERS = [f for f in toc_files() if (ROOT / f"{f}.md").read_text().startswith("---\njupytext:")]


def test_every_chapter_file_is_in_the_toc():
    on_disk = {p.with_suffix("").relative_to(ROOT).as_posix() for p in (ROOT / "book").glob("*.md")}
    assert on_disk == set(toc_files()), "book/*.md and _toc.yml disagree"


@pytest.fixture(scope="module")
def report():
    if not REPORT.is_file():
        pytest.fail(f"{REPORT} is missing: build the site first (python scripts/build_site.py, or make test)",
                    pytrace=False)
    return json.loads(REPORT.read_text())


def test_strict_build_passed_with_zero_warnings(report):
    assert "-W -n --keep-going" in report["command"]
    assert report["returncode"] == 0, "\n".join(report["warnings"])
    assert report["warnings"] == []


def test_every_chapter_was_executed_afresh_by_the_build(report):
    """Nothing is cached between builds: myst-nb ran every chapter's notebook in this build."""
    executed = report["executed_seconds"]
    assert set(CHAPTERS) <= set(executed), f"not executed by the build: {sorted(set(CHAPTERS) - set(executed))}"
    assert all(seconds > 0 for seconds in executed.values())


def test_every_toc_page_was_built(report):
    for page in toc_files():
        assert f"{page}.html" in report["pages"], f"{page} was not built"


def test_pages_load_nothing_from_other_sites(report):
    """No page links a script, stylesheet, font or image from another host."""
    html_dir = ROOT / "_build" / "html"
    remote = re.compile(r"""<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)
    for page in report["pages"]:
        text = (html_dir / page).read_text()
        for match in remote.finditer(text):
            tag = text[match.start():text.find(">", match.start()) + 1]
            # A <link> to another site that the browser does not fetch (a plain hyperlink) is fine.
            if tag.lower().startswith("<link") and not re.search(r'rel=["\'](?:stylesheet|preload|icon|modulepreload)',
                                                                  tag, re.I):
                continue
            pytest.fail(f"{page} loads {tag}")


def test_every_exercise_solution_passes_in_the_built_pages(report):
    """The built pages show each solution's check as correct and no check crashed."""
    html_dir = ROOT / "_build" / "html"
    for page in report["pages"]:
        text = (html_dir / page).read_text()
        if "mha-verdict" not in text:
            continue
        correct = text.count("mha-verdict mha-verdict-correct")
        solutions = len(re.findall(r'class="[^"]*\bsolution\b', text))
        assert correct >= max(solutions, 1), f"{page}: {solutions} solutions but {correct} correct checks"
        assert "mha-verdict-wrong" not in text, f"{page}: a check in the built page says wrong"
        assert "could not be checked" not in text, f"{page}: a check crashed"
