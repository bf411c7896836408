"""The book: every chapter executes on its own, and the strict build of the site passed.

The site is built once per test run by ``scripts/build_site.py`` (``make test`` runs it before
pytest); these tests read its report instead of building a second time.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import toc_files

ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "_build" / "build-report.json"

pytestmark = pytest.mark.book


CHAPTERS = [f for f in toc_files() if (ROOT / f"{f}.md").read_text().startswith("---\njupytext:")]


def test_every_chapter_file_is_in_the_toc():
    on_disk = {p.with_suffix("").relative_to(ROOT).as_posix() for p in (ROOT / "book").glob("*.md")}
    assert on_disk == set(toc_files()), "book/*.md and _toc.yml disagree"


CELL_TIMES = ROOT / "_build" / "cell-times.json"


def record_cell_times(chapter, nb, seconds):
    """Keep, in ``_build/cell-times.json``, the chapter's run: with the kernel, its cells alone, its slowest cells.

    A record for maintainers, not a test: budgets are measured in ``benchmarks/``.
    """
    from datetime import datetime

    def duration(cell):
        t = cell.metadata.get("execution", {})
        start, end = t.get("iopub.execute_input"), t.get("shell.execute_reply")
        if not (start and end):
            return 0.0
        return (datetime.fromisoformat(end.rstrip("Z")) - datetime.fromisoformat(start.rstrip("Z"))).total_seconds()

    cells = [(i, duration(c)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    CELL_TIMES.parent.mkdir(exist_ok=True)
    data = json.loads(CELL_TIMES.read_text()) if CELL_TIMES.is_file() else {}
    data[chapter] = {"with_kernel": round(seconds, 2), "cells": round(sum(t for _, t in cells), 2),
                     "slowest_cells": [[i, round(t, 2)] for i, t in sorted(cells, key=lambda c: -c[1])[:3]]}
    CELL_TIMES.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_executes(chapter):
    """Run the chapter top to bottom in a fresh kernel: no error, nothing on stderr."""
    import time

    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(ROOT / f"{chapter}.md")
    started = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", record_timing=True,
                   resources={"metadata": {"path": str(ROOT / "book")}}).execute()
    record_cell_times(chapter, nb, time.perf_counter() - started)
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", f"cell {index} raised: {output.get('ename')}"
            if output.get("output_type") == "stream":
                assert output.get("name") != "stderr", f"cell {index} wrote to stderr: {output.get('text')}"


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
