"""What the intro (book/00_intro.md) tells a reader to run or open exists, and its map is complete.

The intro names commands, folders and files ("run `make lab`", "`notebooks/NN_slug.ipynb`") and
the site's buttons. It is read with the build's MyST parser (scripts/myst_reader.py), and every
inline code span of its prose is checked against the repository:

* ``make TARGET ...``: every target is a rule of the Makefile;
* a path (a span with a "/" or a file suffix, and no spaces) exists. ``NN_slug`` stands for every
  chapter of _toc.yml. The notebook edition is generated, not tracked, so a path in it must be
  where scripts/notebook_edition.py writes (``OUT``, one ``<chapter>.ipynb`` per chapter), where
  ``make lab`` opens JupyterLab (scripts/lab.py) and where the Binder links point
  (_ext/mha_launch.py);
* other spans (a Python name, a shape comment) are skipped.

Then the claims made in words: ``make lab`` builds the notebook edition and starts JupyterLab;
"Binder" needs a BinderHub in _config.yml; "rocket" needs launch buttons; "Live Code" may be named
only while _config.yml loads the book's Live Code (the local extension mha_live), and ``make live``
starts scripts/lab.py's ``live`` server. And the map (the section "What each chapter
does") links every chapter of _toc.yml after the intro, each once, in the book's order.

Every check also runs on a made-up intro that names things that do not exist: the test can fail.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path, PurePosixPath

import pytest
import yaml

import lab                 # scripts/ (on pytest's pythonpath)
import myst_reader
import notebook_edition

ROOT = Path(__file__).resolve().parents[2]
INTRO = ROOT / "book" / "00_intro.md"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
LAUNCH = CONFIG.get("launch_buttons") or {}
LIVE = "mha_live" in ((CONFIG.get("sphinx") or {}).get("local_extensions") or {})
MAP_TITLE = "What each chapter does"
SUFFIXES = {".txt", ".py", ".md", ".ipynb", ".yml", ".yaml", ".toml", ".json", ".cfg", ".js", ".bib"}
PATH_LIKE = re.compile(r"^[\w.\-/]+$")
RULE = re.compile(r"^([^\s:=#][^:=#]*?)\s*:(?!=)(.*)$")   # "target other: prerequisites" (not ":=")


def _mha_launch():
    spec = importlib.util.spec_from_file_location("mha_launch", ROOT / "_ext" / "mha_launch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MHA_LAUNCH = _mha_launch()


# =================================================================================================
# What the intro names
# =================================================================================================
def code_spans(text: str) -> list[str]:
    """The inline code spans of the prose (code cells and math are not inline code)."""
    return [child.content for token in myst_reader.parse(text) if token.type == "inline"
            for child in token.children or [] if child.type == "code_inline"]


def make_rules(makefile: Path = ROOT / "Makefile") -> dict[str, tuple[list[str], list[str]]]:
    """Makefile target -> (its prerequisites, its recipe lines)."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    current: list[str] = []
    for line in makefile.read_text(encoding="utf-8").splitlines():
        if line.startswith("\t"):
            for target in current:
                rules[target][1].append(line.strip())
            continue
        match = RULE.match(line)
        if not match or line.lstrip().startswith("#"):
            current = [] if line.strip() and not line.lstrip().startswith("#") else current
            continue
        current = match[1].split()
        prerequisites = match[2].split("#")[0].replace("|", " ").split()
        for target in current:
            rules.setdefault(target, ([], []))[0].extend(prerequisites)
    return rules


def make_runs(target: str, rules: dict) -> str:
    """Every recipe line that `make target` can run (its prerequisites' too), as one text."""
    seen, todo, lines = set(), [target], []
    while todo:
        name = todo.pop()
        if name in seen or name not in rules:
            continue
        seen.add(name)
        prerequisites, recipe = rules[name]
        lines += recipe
        todo += prerequisites
    return "\n".join(lines)


def edition_folder() -> str:
    return notebook_edition.OUT.relative_to(ROOT).as_posix()


def path_problems(span: str, chapters: list[str]) -> list[str]:
    """Why a path named in the intro does not exist (empty when it does, or when it is no path)."""
    if not PATH_LIKE.match(span) or ("/" not in span and PurePosixPath(span).suffix not in SUFFIXES):
        return []
    paths = [span.replace("NN_slug", stem) for stem in chapters] if "NN_slug" in span else [span]
    problems = []
    for path in paths:
        parts = PurePosixPath(path.rstrip("/")).parts
        if parts and parts[0] == edition_folder():          # the generated notebook edition
            if lab.NOTEBOOKS != edition_folder() or MHA_LAUNCH.NOTEBOOKS != edition_folder():
                problems.append(f"`{span}`: make lab opens {lab.NOTEBOOKS}/ and Binder opens "
                                f"{MHA_LAUNCH.NOTEBOOKS}/, but the edition is written to {edition_folder()}/")
            if len(parts) > 1 and (len(parts) != 2 or parts[1] not in {f"{s}.ipynb" for s in chapters}):
                problems.append(f"`{span}`: notebook_edition.py writes no {path}")
        elif not (ROOT / path).exists():
            problems.append(f"`{span}`: {path} does not exist")
    return problems


def map_problems(text: str, chapters: list[str]) -> list[str]:
    """Why the map does not link every chapter after the intro once, in order."""
    tokens = myst_reader.parse(text)
    headings = [(i, t) for i, t in enumerate(tokens) if t.type == "heading_open"]
    start = next((t.map[0] for i, t in headings if tokens[i + 1].content.strip() == MAP_TITLE), None)
    if start is None:
        return [f"no section {MAP_TITLE!r}"]
    level = next(t.tag for i, t in headings if t.map[0] == start)
    end = next((t.map[0] for i, t in headings if t.map[0] > start and t.tag <= level), len(text.split("\n")))
    line_starts = [0]
    for line in text.split("\n"):
        line_starts.append(line_starts[-1] + len(line) + 1)
    linked = [PurePosixPath(re.sub(r"^.*<(.*)>$", r"\1", role.content).strip()).name
              for role in myst_reader.roles(text, tokens)
              if role.name == "doc" and line_starts[start] <= role.start < line_starts[end]]
    expected = [stem for stem in chapters if stem != INTRO.stem]
    if linked != expected:
        return [f"the map links {linked}, but the chapters after the intro are {expected}"]
    return []


def problems(text: str) -> list[str]:
    """Everything the intro names that the repository does not have."""
    chapters = notebook_edition.chapter_stems()
    rules = make_rules()
    found = []
    for span in code_spans(text):
        words = span.split()
        if words[:1] == ["make"]:
            found += [f"`{span}`: the Makefile has no target {target!r}"
                      for target in words[1:] if "=" not in target and target not in rules]
        else:
            found += path_problems(span, chapters)
    prose = re.sub(r"\s+", " ", text)
    if "make lab" in prose:
        runs = make_runs("lab", rules)
        for script in ("scripts/notebook_edition.py", "scripts/lab.py"):
            if script not in runs:
                found.append(f"`make lab` does not run {script}")
    if "Binder" in prose:
        if not LAUNCH.get("binderhub_url"):
            found.append("the intro names Binder, but _config.yml sets no launch_buttons.binderhub_url")
        if MHA_LAUNCH.notebook_path("book/01_one_head") != f"{edition_folder()}/01_one_head.ipynb":
            found.append("the Binder link does not open the notebook edition")
    if "rocket" in prose and not (LAUNCH.get("binderhub_url") or LAUNCH.get("thebe") or LAUNCH.get("colab_url")):
        found.append("the intro names the rocket icon, but _config.yml has no launch buttons")
    if "Live Code" in prose and not LIVE:
        found.append("the intro names Live Code, but _config.yml does not load _ext/mha_live.py")
    if "make live" in prose and "scripts/lab.py live" not in make_runs("live", rules):
        found.append("`make live` does not run scripts/lab.py live")
    return found + map_problems(text, chapters)


# =================================================================================================
# The tests
# =================================================================================================
def test_everything_the_intro_names_exists():
    text = INTRO.read_text(encoding="utf-8")
    assert code_spans(text), "the intro names no command or path: has the parser changed?"
    assert not problems(text), "\n".join(problems(text))


def test_the_intro_names_each_way_of_running_the_book():
    prose = re.sub(r"\s+", " ", INTRO.read_text(encoding="utf-8"))
    for words in ("make lab", "Binder", "notebooks/NN_slug.ipynb"):
        assert words in prose, f"the intro no longer says {words!r}"


MADE_UP = f"""# Intro

## How to use the book

Run `make labz`, then `make lab CH=01`. Open `notebooks/NN_slug.ipynb`, `notebooks/extra/x.ipynb`,
`requirements-none.txt` or `book/NN_slug.txt`. Click Live Code, or the rocket, then Binder.
`mha` and `# (B, T, d) -> (B, h, T, d_k)` are not paths.

## {MAP_TITLE}

- {{doc}}`01_one_head`. One head.
- {{doc}}`03_splitting`. Splitting.
"""


def test_the_checks_fail_on_an_intro_that_names_what_does_not_exist():
    found = "\n".join(problems(MADE_UP))
    assert "no target 'labz'" in found
    assert "'lab'" not in found and "CH=01" not in found            # a real target and a variable
    assert "notebooks/extra/x.ipynb" in found
    assert "requirements-none.txt does not exist" in found
    assert "book/01_one_head.txt does not exist" in found
    assert "notebooks/NN_slug.ipynb" not in found                      # where the edition is written
    assert "`mha`" not in found and "(B, T, d)" not in found
    assert "the map links ['01_one_head', '03_splitting']" in found
    assert ("names Live Code" in found) == (not LIVE)


@pytest.mark.parametrize("text, phrase", [
    ("Intro.\n", f"no section {MAP_TITLE!r}"),
    (f"## {MAP_TITLE}\n\n" + "".join(f"- {{doc}}`{s}`.\n" for s in reversed(notebook_edition.chapter_stems()[1:])),
     "the map links"),
])
def test_the_map_check_fails_on_a_wrong_map(text, phrase):
    assert any(phrase in p for p in map_problems(text, notebook_edition.chapter_stems()))


def test_the_makefile_reader_finds_the_targets_and_what_lab_runs():
    rules = make_rules()
    assert {"site", "test", "lab", "notebooks", "chapter"} <= set(rules)
    assert "scripts/lab.py" in make_runs("lab", rules)
    assert "scripts/notebook_edition.py" in make_runs("lab", rules)
    assert "scripts/lab.py" not in make_runs("site", rules)
