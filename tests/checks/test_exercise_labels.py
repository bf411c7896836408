"""Every "Try it" exercise in the book is wired up end to end.

For each ``{exercise}`` directive in book/*.md this checks that its ``:label:``
has a registered checker, that a folded ``{solution-start} <label>`` ...
``{solution-end}`` pair follows it, and that a code cell calls
``mha.checks.check("<label>", ...)`` both in the exercise (the reader's check
cell) and in the solution (so that every build proves the solution passes).
In the other direction, every registered checker must belong to an exercise in
some chapter, every check call must name an exercise of its own chapter, and
every page with exercises must be listed in _toc.yml (else it is never built).
Each checker lives in the module named by its chapter's slug: the exercise of
``book/NN_slug.md`` is checked in ``mha.checks.slug``.

Nothing is skipped: a book without exercises, or a checker without a chapter,
fails with the list of what is missing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import mha.checks
import myst_reader  # scripts/ (on pytest's pythonpath): the build's MyST parser, shared with the edition
from conftest import toc_files

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"

_CHECK_CALL = re.compile(r"""mha\.checks\.check\(\s*(?P<q>["'])(?P<label>[^"'\n]+)(?P=q)""")
_EXERCISE = {"exercise", "exercise-start", "prf:exercise"}


@dataclass
class Event:
    kind: str          # "exercise", "solution-start", "solution-end", "check"
    label: str
    line: int
    options: dict = field(default_factory=dict)


def parse_events(text: str) -> list[Event]:
    """The exercise-related events of one MyST Markdown page, in order (lines count from 1).

    The page is read by myst_reader (myst-parser's tokens), so only real directives count: a
    fence inside a code block or a check call in prose is not an event.
    """
    events: list[Event] = []
    for directive in myst_reader.directives(text):
        line = directive.line + 1
        if directive.name in _EXERCISE:
            events.append(Event("exercise", directive.options.get("label", ""), line, directive.options))
        elif directive.name == "solution-start":
            events.append(Event("solution-start", directive.argument, line, directive.options))
        elif directive.name == "solution-end":
            events.append(Event("solution-end", "", line, directive.options))
        elif directive.name == "code-cell":
            events += _check_calls(directive.body, directive.body_line)
    return events


def _check_calls(body: list[str], first: int) -> list[Event]:
    """``mha.checks.check("<label>", ...)`` calls in a code cell's body, whose line 0 is `first`."""
    text = "\n".join(body)
    return [Event("check", call["label"], first + 1 + text.count("\n", 0, call.start()))
            for call in _CHECK_CALL.finditer(text)]


@dataclass
class Exercise:
    page: str
    label: str
    line: int
    checks_in_exercise: list = field(default_factory=list)
    solution_line: int | None = None
    solution_class: str = ""
    solution_closed: bool = False
    checks_in_solution: list = field(default_factory=list)


def collect(page: str, events: list[Event]) -> tuple[list[Exercise], list[str]]:
    """Exercises of one page, and the problems that do not belong to one exercise."""
    exercises: list[Exercise] = []
    problems: list[str] = []
    by_label: dict[str, Exercise] = {}
    current: Exercise | None = None
    in_solution: Exercise | None = None
    for ev in events:
        where = f"{page}:{ev.line}"
        if ev.kind == "exercise":
            if not ev.label:
                problems.append(f"{where}: an exercise has no :label:")
                current = None
                continue
            current = Exercise(page, ev.label, ev.line)
            exercises.append(current)
            by_label.setdefault(ev.label, current)
            in_solution = None
        elif ev.kind == "solution-start":
            target = by_label.get(ev.label)
            if target is None:
                problems.append(f"{where}: solution-start {ev.label!r} follows no exercise with that label")
                continue
            if target.solution_line is not None:
                problems.append(f"{where}: a second solution for {ev.label!r}")
            target.solution_line, target.solution_class = ev.line, ev.options.get("class", "")
            in_solution, current = target, None
        elif ev.kind == "solution-end":
            if in_solution is None:
                problems.append(f"{where}: solution-end without an open solution-start")
            else:
                in_solution.solution_closed = True
            in_solution = None
        elif ev.kind == "check":
            if in_solution is not None:
                if ev.label == in_solution.label:
                    in_solution.checks_in_solution.append(ev.line)
                else:
                    problems.append(f"{where}: the solution of {in_solution.label!r} checks {ev.label!r}")
            elif current is not None and ev.label == current.label:
                current.checks_in_exercise.append(ev.line)
            elif ev.label not in by_label:
                problems.append(f"{where}: check({ev.label!r}) names no exercise of this page")
            else:
                problems.append(f"{where}: check({ev.label!r}) is outside its exercise and its solution")
    if in_solution is not None:
        problems.append(f"{page}: the solution of {in_solution.label!r} has no solution-end")
    return exercises, problems


def exercise_problems(ex: Exercise, registered: dict) -> list[str]:
    """What is missing for one exercise."""
    where = f"{ex.page}:{ex.line} ({ex.label})"
    found = []
    if ex.label not in registered:
        found.append(f"{where}: no checker is registered for this label")
    if not ex.checks_in_exercise:
        found.append(f'{where}: no mha.checks.check("{ex.label}", ...) cell between the exercise and its solution')
    if ex.solution_line is None:
        found.append(f"{where}: no {{solution-start}} {ex.label} block")
    else:
        if "dropdown" not in ex.solution_class.split():
            found.append(f"{where}: the solution is not folded away (:class: dropdown)")
        if not ex.solution_closed:
            found.append(f"{where}: the solution has no {{solution-end}}")
        if not ex.checks_in_solution:
            found.append(f'{where}: the solution has no mha.checks.check("{ex.label}", ...) cell')
    return found


def book_exercises() -> tuple[list[Exercise], list[str]]:
    exercises, problems = [], []
    for path in sorted(BOOK.glob("*.md")):
        page = path.relative_to(BOOK.parent).as_posix()
        found, page_problems = collect(page, parse_events(path.read_text(encoding="utf-8")))
        exercises += found
        problems += page_problems
    return exercises, problems


# ----------------------------------------------------------------------------- the book


def test_the_book_has_exercises():
    exercises, _ = book_exercises()
    assert exercises, f"no {{exercise}} directive with a :label: found in {BOOK}/*.md"


def test_every_exercise_has_a_checker_a_solution_and_check_calls():
    exercises, problems = book_exercises()
    registered = mha.checks.labels()
    for ex in exercises:
        problems += exercise_problems(ex, registered)
    assert not problems, "\n".join(problems)


def test_exercise_labels_are_unique_across_the_book():
    exercises, _ = book_exercises()
    seen: dict[str, str] = {}
    twice = []
    for ex in exercises:
        if ex.label in seen:
            twice.append(f"{ex.label}: {seen[ex.label]} and {ex.page}:{ex.line}")
        seen.setdefault(ex.label, f"{ex.page}:{ex.line}")
    assert not twice, "\n".join(twice)


def test_every_registered_checker_belongs_to_an_exercise_in_a_chapter():
    exercises, _ = book_exercises()
    in_book = {ex.label for ex in exercises}
    orphans = sorted(set(mha.checks.labels()) - in_book)
    assert not orphans, ("registered checkers with no {exercise} in book/*.md: " + ", ".join(orphans))


def chapter_slug(page: str) -> str:
    """``"book/08_costs.md"`` -> ``"costs"``: the file name without its number and extension."""
    stem = Path(page).stem
    match = re.fullmatch(r"\d+_(?P<slug>\w+)", stem)
    return match["slug"] if match else stem


def misplaced_checkers(exercises, module_of) -> list[str]:
    """Exercises whose checker is not defined in the module named by their chapter's slug."""
    found = []
    for ex in exercises:
        if ex.label not in module_of:
            continue
        expected = f"mha.checks.{chapter_slug(ex.page)}"
        if module_of[ex.label] != expected:
            found.append(f"{ex.page}:{ex.line} ({ex.label}): checked in {module_of[ex.label]}, "
                         f"but its chapter's module is {expected}")
    return found


def test_every_checker_lives_in_the_module_of_its_chapter():
    exercises, _ = book_exercises()
    module_of = {label: mha.checks.checker_module(label) for label in mha.checks.labels()}
    problems = misplaced_checkers(exercises, module_of)
    assert not problems, "\n".join(problems)


def test_every_chapter_module_holds_only_its_chapters_checkers():
    """No module by range or by kind: every checker module is a chapter's slug (or the core)."""
    exercises, _ = book_exercises()
    slugs = {chapter_slug(ex.page) for ex in exercises}
    modules = {mha.checks.checker_module(label).rsplit(".", 1)[-1] for label in mha.checks.labels()}
    assert modules <= slugs, sorted(modules - slugs)
    assert not any(ch.isdigit() for name in modules for ch in name), modules


def test_misplaced_checkers_are_reported():
    exercises, _ = collect("book/08_costs.md", parse_events("```{exercise} T\n:label: ex-a\n```\n"))
    assert chapter_slug("book/08_costs.md") == "costs" and chapter_slug("book/12_rank_bound.md") == "rank_bound"
    assert misplaced_checkers(exercises, {"ex-a": "mha.checks.costs"}) == []
    found = misplaced_checkers(exercises, {"ex-a": "mha.checks.chapters_5_7"})
    assert found and "its chapter's module is mha.checks.costs" in found[0]


def test_every_page_with_exercises_is_built():
    """A page left out of _toc.yml is not built, so its solutions would never be checked."""
    listed = set(toc_files())
    exercises, _ = book_exercises()
    missing = sorted({ex.page for ex in exercises if ex.page.rsplit(".", 1)[0] not in listed})
    assert not missing, "pages with exercises that _toc.yml does not list: " + ", ".join(missing)


# ----------------------------------------------------------------------------- the parser itself

_PAGE = '''
# A page

Prose that mentions `mha.checks.check("ex-prose", x)` does not count.

```python
mha.checks.check("ex-in-a-plain-block", x)
```

```{exercise} First
:label: ex-first

Fill in `f`.
```

```{code-cell} ipython3
def f(x):
    raise NotImplementedError
```

```{code-cell} ipython3
mha.checks.check("ex-first", f)
```

````{solution-start} ex-first
:class: dropdown
````

```{code-cell} ipython3
---
tags: [hide-output]
---
def f(x):
    return x


mha.checks.check('ex-first', f)
```

````{solution-end}
````

:::{exercise} Second
:label: ex-second
A colon-fenced exercise.
:::

````{admonition} Note
```{code-cell} ipython3
mha.checks.check("ex-second", 1)
```
````

````{solution-start} ex-second
````
````{solution-end}
````
'''


def test_parser_finds_exercises_solutions_and_check_cells_only_in_code_cells():
    events = parse_events(_PAGE)
    kinds = [(e.kind, e.label) for e in events]
    assert kinds == [
        ("exercise", "ex-first"), ("check", "ex-first"), ("solution-start", "ex-first"),
        ("check", "ex-first"), ("solution-end", ""),
        ("exercise", "ex-second"), ("check", "ex-second"), ("solution-start", "ex-second"),
        ("solution-end", ""),
    ]
    assert events[2].options == {"class": "dropdown"}
    assert _PAGE.splitlines()[events[1].line - 1].startswith("mha.checks.check")


def test_collect_reports_what_each_exercise_lacks():
    exercises, problems = collect("page.md", parse_events(_PAGE))
    assert problems == []
    first, second = exercises
    registered = {"ex-first": "code"}
    assert exercise_problems(first, registered) == []
    found = "\n".join(exercise_problems(second, registered))
    assert "no checker is registered" in found
    assert "not folded away" in found
    assert "the solution has no mha.checks.check" in found


@pytest.mark.parametrize(
    ("page", "phrase"),
    [
        ("```{exercise} T\nno label\n```\n", "has no :label:"),
        ("````{solution-start} ex-x\n:class: dropdown\n````\n", "follows no exercise"),
        ("```{exercise} T\n:label: ex-a\n```\n````{solution-start} ex-a\n:class: dropdown\n````\n",
         "has no solution-end"),
        ("```{code-cell} ipython3\nmha.checks.check(\"ex-z\", 1)\n```\n", "names no exercise of this page"),
        ("```{exercise} T\n:label: ex-a\n```\n````{solution-start} ex-a\n````\n"
         "```{code-cell} ipython3\nmha.checks.check(\"ex-b\", 1)\n```\n````{solution-end}\n````\n",
         "the solution of 'ex-a' checks 'ex-b'"),
    ],
)
def test_collect_reports_misplaced_pieces(page, phrase):
    _, problems = collect("page.md", parse_events(page))
    assert any(phrase in p for p in problems), problems


def test_an_exercise_without_solution_or_checks_is_reported():
    exercises, _ = collect("page.md", parse_events("```{exercise} T\n:label: ex-lonely\n```\n"))
    found = "\n".join(exercise_problems(exercises[0], {}))
    for phrase in ("no checker is registered", "no mha.checks.check", "no {solution-start} ex-lonely"):
        assert phrase in found
