"""No exercise can be answered by copying code that the page shows above it.

For every exercise of the book (the pages of _toc.yml), the code of its solution (the code cells
between ``{solution-start} <label>`` and ``{solution-end}``) is compared with the code the page
shows above the exercise (before its ``{exercise}`` directive). The exercise is flagged when

* every line of the solution's code is already there, or
* ``RUN`` or more lines of one solution cell in a row appear, one after another and in the same
  order, in one block of that code (a listing copied under another name, say).

Lines are compared as Python tokens, so indentation, spacing and comments do not count; blank and
comment lines are dropped, and so is the ``mha.checks.check(...)`` line that ends every solution.

"The code the page shows" is every code block a reader can see on the page, open or folded:

* code cells, except those tagged ``remove-cell`` or ``remove-input`` (not on the page at all).
  A cell tagged ``hide-input`` or ``hide-cell`` counts: its code is one click away, as close as
  a solution, and a listing folded above an exercise would answer it just as well;
* ``literalinclude`` listings (read with Sphinx's own reader, as the build reads them), code
  fences and ``{code}`` blocks, also inside admonitions and dropdowns;
* but not the solutions of earlier exercises: they are answers themselves, and a later exercise
  may build on an earlier one.

This is a line-by-line guard. It cannot see a solution that restates the page's code in other
words, nor an answer that the page prints as output (a row of numbers): those need a reader.
The pages are read with the build's MyST parser (scripts/myst_reader.py).
"""
from __future__ import annotations

import io
import tokenize
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import myst_reader  # scripts/ (on pytest's pythonpath): the build's MyST parser
from conftest import toc_files

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
RUN = 3                                             # lines in a row that count as a copied listing
REMOVED = {"remove-cell", "remove-input"}
EXERCISE = {"exercise", "exercise-start", "prf:exercise"}
CODE_DIRECTIVES = {"code", "code-block", "sourcecode"}
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING,
         tokenize.ENDMARKER}


# =================================================================================================
# Reading a page
# =================================================================================================
def code_lines(source: str) -> list[str]:
    """The logical lines of `source` as token strings joined by spaces, without comments, blank
    lines and the ``mha.checks.check(...)`` call."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        lines = [line.split("#")[0].split() for line in source.splitlines()]
        lines = [" ".join(words) for words in lines if words]
    else:
        lines, current = [], []
        for token in tokens:
            if token.type in _SKIP:
                continue
            if token.type == tokenize.NEWLINE:
                lines.append(" ".join(current))
                current = []
            else:
                current.append(token.string)
        if current:
            lines.append(" ".join(current))
    return [line for line in lines if line and not line.replace(" ", "").startswith("mha.checks.check(")]


def _included(d: myst_reader.Directive) -> str:
    from sphinx.directives.code import LiteralIncludeReader

    path = (BOOK / d.argument).resolve()
    config = types.SimpleNamespace(source_encoding="utf-8")
    return LiteralIncludeReader(str(path), dict(d.options), config).read()[0]


@dataclass
class Page:
    """The code blocks a page shows, the exercises and the code of their solutions, with lines."""

    shown: list = field(default_factory=list)       # (line, [code lines]) of each visible block
    exercises: dict = field(default_factory=dict)   # label -> line of its exercise directive
    solutions: dict = field(default_factory=dict)   # label -> [[code lines] of each solution cell]


def read_page(text: str) -> Page:
    page = Page()
    solution = None

    def walk(text: str, offset: int):
        nonlocal solution
        for block in myst_reader.blocks(text):
            line = offset + block.start
            if block.kind == "code" and solution is None:               # a plain code fence
                page.shown.append((line, code_lines(block.token.content)))
            if block.kind != "directive":
                continue
            d = block.directive
            body = "\n".join(d.body)
            if d.name in EXERCISE:
                page.exercises[d.options.get("label", "")] = line
            elif d.name == "solution-start":
                solution = d.argument
                page.solutions.setdefault(solution, [])
            elif d.name == "solution-end":
                solution = None
            elif d.name == "code-cell":
                if solution is not None:
                    page.solutions[solution].append(code_lines(body))
                elif not REMOVED & set(d.options.get("tags") or []):
                    page.shown.append((line, code_lines(body)))
            elif solution is None and d.name == "literalinclude":
                page.shown.append((line, code_lines(_included(d))))
            elif solution is None and d.name in CODE_DIRECTIVES:
                page.shown.append((line, code_lines(body)))
            elif d.name not in myst_reader.LITERAL:
                walk(body, offset + d.body_line)                          # admonitions, dropdowns

    walk(text, 0)
    return page


# =================================================================================================
# Copies
# =================================================================================================
def _longest_run(cell: list[str], block: list[str]) -> int:
    """The most lines of `cell` in a row that also stand in a row in `block`."""
    best, previous = 0, [0] * (len(block) + 1)
    for a in cell:
        current = [0] * (len(block) + 1)
        for j, b in enumerate(block, 1):
            if a == b:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def copies(page: Page) -> dict[str, str]:
    """label -> why its solution can be copied from the code shown above its exercise."""
    found = {}
    for label, cells in page.solutions.items():
        start = page.exercises.get(label)
        if start is None:
            continue                                 # test_exercise_labels reports it
        above = [lines for line, lines in page.shown if line < start]
        shown = {line for lines in above for line in lines}
        solution = [line for cell in cells for line in cell]
        if solution and all(line in shown for line in solution):
            found[label] = f"all {len(solution)} lines of its solution are shown above it"
            continue
        run = max((_longest_run(cell, block) for cell in cells for block in above), default=0)
        if run >= RUN:
            found[label] = f"{run} lines of its solution in a row are shown above it, in one block"
    return found


PAGES = [page for page in toc_files() if "solution-start" in (ROOT / f"{page}.md").read_text()]


def test_the_book_has_exercises_to_check():
    assert PAGES and any(read_page((ROOT / f"{p}.md").read_text()).solutions for p in PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_no_solution_is_shown_above_its_exercise(page):
    found = copies(read_page((ROOT / f"{page}.md").read_text(encoding="utf-8")))
    assert not found, f"{page}: " + "; ".join(f"{label}: {why}" for label, why in found.items())


# =================================================================================================
# The guard itself, on made-up pages
# =================================================================================================
def _page(shown: str, solution: str, tags: str = "") -> str:
    return (f"# A page\n\n```{{code-cell}} ipython3\n{tags}{shown}\n```\n\n"
            "```{exercise} Do it\n:label: ex-made-up\n\nDo it.\n```\n\n"
            "```{code-cell} ipython3\nanswer = ...\n```\n\n"
            "````{solution-start} ex-made-up\n:class: dropdown\n````\n\n"
            f"```{{code-cell}} ipython3\n{solution}\n```\n\n````{{solution-end}}\n````\n")


SOLUTION = ("row = S[2] / np.sqrt(d_k)   # scaled\nrow[1] = -np.inf\n\n"
            "answer = np.exp(row) / np.exp(row).sum()\nmha.checks.check(\"ex-made-up\", answer)")


@pytest.mark.parametrize("shown, tags, flagged", [
    ("row = S[2]/np.sqrt(d_k)\nrow[1] = -np.inf\nanswer = np.exp(row)/np.exp(row).sum()", "", True),
    ("# other\nx = 1\nrow = S[2] / np.sqrt(d_k)\nrow[1] = -np.inf\nanswer = np.exp(row) / np.exp(row).sum()",
     ":tags: [hide-input]\n", True),
    ("row = S[2] / np.sqrt(d_k)\nrow[1] = -np.inf\nanswer = np.exp(row) / np.exp(row).sum()",
     ":tags: [remove-cell]\n", False),
    ("row = S[2] / np.sqrt(d_k)\nanswer = np.exp(row) / np.exp(row).sum()", "", False),
])
def test_the_guard_flags_a_shown_solution(shown, tags, flagged):
    found = copies(read_page(_page(shown, SOLUTION, tags)))
    assert ("ex-made-up" in found) is flagged, found


def test_the_guard_flags_a_listing_copied_under_another_name():
    listing = ("def _split(X, h):\n    *lead, T, width = X.shape\n"
               "    X = X.reshape(*lead, T, h, width // h)  # (..., T, h, d_k)\n"
               "    return np.swapaxes(X, -3, -2)\n")
    solution = ("def split_heads(X, h):\n    X = np.asarray(X, dtype=float)\n"
                "    *lead, T, width = X.shape\n    X = X.reshape(*lead, T, h, width // h)\n"
                "    return np.swapaxes(X, -3, -2)\n\n\nmha.checks.check(\"ex-made-up\", split_heads)")
    text = _page("x = 1", solution).replace("# A page\n", f"# A page\n\n```python\n{listing}```\n")
    assert "3 lines of its solution in a row" in copies(read_page(text)).get("ex-made-up", "")
    in_dropdown = f"# A page\n\n````{{dropdown}} The library\n\n```python\n{listing}```\n````\n"
    assert "ex-made-up" in copies(read_page(_page("x = 1", solution).replace("# A page\n", in_dropdown)))
