"""The notebook edition (scripts/notebook_edition.py) reads like the site and runs as a notebook.

Writes the edition from the last site build (_build; build first) into a temporary folder and
checks, for every chapter:

* no raw MyST is left in a Markdown cell (roles, directive fences, colon fences, targets,
  solution markers, directive options), and every glued value of the source is shown, formatted
  as the site formats it;
* labelled equations carry the site's numbers; included code is inlined;
* every solution is one closed <details> Markdown cell after its exercise, its code is a fenced
  block and never a code cell; the exercise's answer and check cells stay code cells;
* the code cells are the chapter's code cells, in order, minus the solutions' code;
  remove-cell, remove-input and hide-input cells start folded;
* writing the edition leaves book/ unchanged, and a notebook the reader edited is kept;
* (marked `book`) every notebook runs top to bottom in a fresh kernel with no error or stderr,
  and draws no figure text under 10 pt (``tests/_figure_text.py`` watches every text drawn, from
  a cell put before the chapter's first one for the run only; issue 30);
  the run's cell times are kept in ``_build/cell-times.json`` (a record for maintainers).
"""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import nbformat
import pytest

from conftest import tree_digest

ROOT = Path(__file__).resolve().parents[2]
import notebook_edition as ne  # noqa: E402

CHAPTERS = ne.chapter_stems()

CELL_TIMES = ROOT / "_build" / "cell-times.json"

# Run in the chapter's kernel before its first cell (not written to any notebook): from then on, every
# figure text drawn under 10 pt writes a line to stderr, which fails the run like any other stderr.
WATCH_FIGURE_TEXT = (
    "import importlib.util as _u\n"
    f"_s = _u.spec_from_file_location('_figure_text', {str(ROOT / 'tests' / '_figure_text.py')!r})\n"
    "_m = _u.module_from_spec(_s)\n_s.loader.exec_module(_m)\n_m.report_to_stderr()\ndel _u, _s, _m")


def record_cell_times(chapter, nb, seconds):
    """Keep, in ``_build/cell-times.json``, the chapter's run (its notebook edition): with the kernel, its cells alone, its slowest cells.

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

RAW_MYST = re.compile(
    r"\{[a-z][\w:.-]*\}`"                  # a role: {glue:text}`x`, {numref}`y`, {cite:p}`z`
    r"|^\s*(`{3,}|:{3,})\s*\{"             # a directive fence: ```{note}, :::{admonition}
    r"|^\s*:::"                            # a colon fence
    r"|\{solution-(start|end)\}|solution-start|solution-end"
    r"|^\s*\([\w:.-]+\)=\s*$"              # a (label)= target
    r"|^\s*:(class|label|tags|pyobject|lines|name):"  # directive options
    r"|^\$\$\s*\([\w-]+\)\s*$", re.M)      # $$ (label)
GLUE_ROLE = re.compile(r"\{glue(?::text)?\}`([^`]+)`")


@pytest.fixture(scope="module")
def edition(tmp_path_factory, site_dir):
    out = tmp_path_factory.mktemp("notebooks")
    before = tree_digest(ROOT / "book")
    result = ne.write_edition(out)
    assert tree_digest(ROOT / "book") == before, "writing the edition changed book/"
    return Edition(out, result)


class Edition:
    def __init__(self, out: Path, result: dict):
        self.out, self.result = out, result

    def read(self, stem: str):
        what = self.result.get(stem, "missing")
        assert not what.startswith(("failed", "missing")), f"notebook edition of {stem}: {what}"
        return nbformat.read(self.out / f"{stem}.ipynb", as_version=4)


def markdown_of(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def read(edition: Edition, stem: str):
    return edition.read(stem)


def test_every_chapter_has_a_notebook(edition):
    assert CHAPTERS and set(CHAPTERS) == set(edition.result)
    for stem in CHAPTERS:
        read(edition, stem)
    assert "01_one_head" in CHAPTERS and "09_real_heads" in CHAPTERS


@pytest.mark.parametrize("stem", CHAPTERS)
def test_no_raw_myst_is_left(edition, stem):
    for text in markdown_of(read(edition, stem)):
        found = [m.group(0) for m in RAW_MYST.finditer(text)]
        assert not found, f"{stem}: raw MyST {found} in:\n{text[:400]}"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_every_glued_value_is_shown_as_the_site_formats_it(edition, stem):
    from myst_nb.core.variables import format_plain_text
    import json

    source = (ROOT / "book" / f"{stem}.md").read_text()
    glue = json.loads((ne.EXECUTED / "book" / f"{stem}.glue.json").read_text()) \
        if "{glue" in source else {}
    text = "\n".join(markdown_of(read(edition, stem)))
    for content in GLUE_ROLE.findall(source):
        key, _, fmt = content.rpartition(":") if ":" in content else (content, "", "")
        key = key or content
        value = format_plain_text(glue[key]["data"]["text/plain"], fmt or "s")
        assert ne._escape(value) in text, f"{stem}: glued {content!r} = {value!r} is not shown"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_equations_carry_the_sites_numbers(edition, stem):
    source = (ROOT / "book" / f"{stem}.md").read_text()
    labels = re.findall(r"^\$\$\s*\(([\w-]+)\)\s*$", source, re.M)
    page = ne.Page.read(ne.HTML / "book" / f"{stem}.html")
    text = "\n".join(markdown_of(read(edition, stem)))
    for label in labels:
        number = page.titles[f"equation-{label}"].strip("()")
        assert f"\\tag{{{number}}}" in text, f"{stem}: equation {label} ({number}) has no tag"


def test_included_code_is_inlined(edition):
    text = "\n".join(markdown_of(read(edition, "01_one_head")))
    assert "def _attend(" in text and "def _softmax_rows(" in text


@pytest.mark.parametrize("stem", CHAPTERS)
def test_solutions_are_closed_details_and_never_code_cells(edition, stem):
    source = (ROOT / "book" / f"{stem}.md").read_text()
    n_solutions = len(re.findall(r"\{solution-start\}", source))
    nb = read(edition, stem)
    solutions = [i for i, c in enumerate(nb.cells)
                 if c.cell_type == "markdown" and "<summary><strong>Solution to" in c.source]
    assert len(solutions) == n_solutions
    code_sources = {c.source.strip() for c in nb.cells if c.cell_type == "code"}
    for i in solutions:
        cell = nb.cells[i].source
        assert cell.startswith("<details>\n") and cell.endswith("</details>"), cell[:200]
        assert "<details open" not in cell and cell.count("<details") == cell.count("</details>")
        for block in re.findall(r"```python\n(.*?)\n```", cell, re.S):
            assert block.strip() not in code_sources, f"{stem}: solution code is a code cell"
        # the exercise's check cell comes just before its solution
        assert nb.cells[i - 1].cell_type == "code" and "mha.checks.check(" in nb.cells[i - 1].source


@pytest.mark.parametrize("stem", CHAPTERS)
def test_code_cells_are_the_chapters_minus_solutions(edition, stem):
    import jupytext

    source_nb = jupytext.read(ROOT / "book" / f"{stem}.md")
    text = (ROOT / "book" / f"{stem}.md").read_text()
    solution_code = set()
    for body in re.findall(r"\{solution-start\}.*?\{solution-end\}", text, re.S):
        for block in re.findall(r"```\{code-cell\}[^\n]*\n(.*?)\n```", body, re.S):
            solution_code.add(re.sub(r"\A(\s*:[\w-]+:[^\n]*\n)+", "", block).strip())
    expected = [c for c in source_nb.cells if c.cell_type == "code" and c.source.strip() not in solution_code]
    got = [c for c in read(edition, stem).cells if c.cell_type == "code"]
    assert [c.source for c in got] == [c.source for c in expected]
    for old, new in zip(expected, got):
        tags = old.metadata.get("tags", [])
        hidden = new.metadata.get("jupyter", {})
        folded = {"remove-cell", "hide-input", "remove-input"} & set(tags)
        assert hidden.get("source_hidden", False) == bool(folded), (stem, tags, hidden)
        assert not any("widget-view" in k for o in new.outputs for k in o.get("data", {}))


def test_a_readers_edited_notebook_is_kept(tmp_path):
    out = tmp_path / "notebooks"
    first = ne.write_edition(out, only={"01_one_head"})
    assert first == {"01_one_head": "written"}
    path = out / "01_one_head.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].source += "\n\nMy note."
    nbformat.write(nb, path)
    assert ne.write_edition(out, only={"01_one_head"}) == {"01_one_head": "kept"}
    assert "My note." in path.read_text()
    assert ne.write_edition(out, force=True, only={"01_one_head"}) == {"01_one_head": "written"}
    assert "My note." not in path.read_text()


@pytest.mark.book
@pytest.mark.parametrize("stem", CHAPTERS)
def test_every_notebook_runs_top_to_bottom(edition, stem):
    from nbclient import NotebookClient

    nb = read(edition, stem)
    nb.cells.insert(0, nbformat.v4.new_code_cell(WATCH_FIGURE_TEXT))
    started = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", record_timing=True,
                   resources={"metadata": {"path": str(edition.out)}}).execute()
    assert not nb.cells.pop(0).outputs, "the figure-text watch did not start cleanly"
    record_cell_times(f"book/{stem}", nb, time.perf_counter() - started)
    bad = [(i, o.get("ename") or o.get("text", "")[:300]) for i, c in enumerate(nb.cells)
           if c.cell_type == "code" for o in c.outputs
           if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")]
    assert not bad, f"{stem}: {bad}"
