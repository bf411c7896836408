#!/usr/bin/env python3
"""Write the notebook edition of the book: ``notebooks/NN_slug.ipynb`` for every chapter.

The chapters are MyST Markdown notebooks (``book/NN_slug.md``). Opened as notebooks in
JupyterLab they would show raw MyST (``{glue:text}`` roles where numbers belong, directives as
code blocks, solutions in plain view), and saving them would rewrite the book's sources. So
Binder and ``make lab`` open a generated copy instead, made from three things the site build
leaves behind:

* the chapter's source, read with jupytext: the cells, in order (their Markdown is read with
  ``scripts/myst_reader.py``, the build's own MyST parser);
* the executed chapter, ``_build/jupyter_execute/book/NN_slug.ipynb``, and its glue data
  (``NN_slug.glue.json``): the outputs as the site shows them and every glued value;
* the built page, ``_build/html/book/NN_slug.html``: the numbers the site gives figures,
  equations, exercises and theorems, the titles of other chapters and the citation texts.

In the copy, Markdown cells are plain CommonMark and HTML that JupyterLab renders: glued values
are filled in, cross-references and citations are text or links to other notebooks, admonitions
and exercises are ``<div class="alert ...">`` boxes, dropdowns and solutions are closed
``<details>`` blocks (a solution's code is a fenced block there, so Run All never runs it), and
included source code is inlined. Code cells keep their source and the site's outputs (widget
views and glue records are dropped: they need a live kernel); ``remove-cell`` and
``hide-input`` cells run as before but start folded.

``notebooks/`` is not tracked by git. A notebook the reader has changed since it was written is
kept (``notebooks/.edition.json`` records what was written); delete it to get a fresh copy.

Usage::

    python scripts/notebook_edition.py            # write the edition from the last site build
    python scripts/notebook_edition.py --build    # first rebuild the site if it is stale
"""
from __future__ import annotations

import argparse
import copy
import hashlib
import html
import json
import os
import re
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import nbformat

import myst_reader as myst  # scripts/myst_reader.py: the build's MyST parser (markdown-it-py tokens)

ROOT = Path(__file__).resolve().parent.parent
BOOK = ROOT / "book"
BUILD = Path(os.environ.get("MHA_BUILD_DIR", ROOT / "_build")).resolve()
EXECUTED = BUILD / "jupyter_execute"
HTML = BUILD / "html"
OUT = ROOT / "notebooks"
MANIFEST_NAME = ".edition.json"

# Output types a notebook without its kernel cannot show, and glue records (shown in the prose).
DROPPED_MIME = ("application/vnd.jupyter.widget-view+json", "application/papermill.record/")

ADMONITIONS = {
    # directive or class -> JupyterLab alert class
    "note": "info", "hint": "info", "seealso": "info", "important": "info", "admonition": "info",
    "tip": "success", "warning": "warning", "caution": "warning", "attention": "warning",
    "danger": "danger", "error": "danger",
}
PROOF_KINDS = {"theorem", "lemma", "proposition", "corollary", "definition", "remark",
               "conjecture", "example", "property", "observation", "axiom", "criterion",
               "algorithm", "assumption", "notation"}


class EditionError(RuntimeError):
    """The chapter uses MyST this script cannot translate, or the build outputs do not match."""


# =================================================================================================
# What the built page says: reference texts, numbers and titles
# =================================================================================================
def _squash(text: str) -> str:
    return " ".join(text.replace("\u00b6", "").split()).rstrip("#").strip()


@dataclass
class Page:
    """Numbers and link texts taken from one built HTML page."""

    links: list = field(default_factory=list)      # (path, fragment, text, kinds)
    titles: dict = field(default_factory=dict)      # element id -> admonition or caption title
    citations: list = field(default_factory=list)   # texts of span.bibtex-citation, in order

    @classmethod
    def read(cls, path: Path) -> "Page":
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
        main = soup.select_one("article") or soup
        page = cls()
        for a in main.select("a.reference.internal"):
            if "headerlink" in (a.get("class") or []) or a.find_parent(class_="bibtex-citation"):
                continue
            href = a.get("href", "")
            target, _, fragment = href.partition("#")
            kinds = {c for el in [a, *a.find_all(True)] for c in (el.get("class") or [])}
            page.links.append((target, fragment, _squash(a.get_text()), kinds))
        for span in main.select("span.bibtex-citation"):
            page.citations.append(_squash(span.get_text()))
        for el in main.select("[id]"):
            title = el.select_one(":scope > .admonition-title, :scope > figcaption, :scope > .eqno")
            if title is not None:
                text = title.get_text()
                if title.name == "figcaption":
                    number = title.select_one(".caption-number")
                    text = number.get_text() if number else ""
                page.titles[el["id"]] = _squash(text)
        return page

    def link(self, fragment: str, kind: str | None = None, path: str | None = None):
        for target, frag, text, kinds in self.links:
            if frag == fragment and (kind is None or kind in kinds) and (path is None or target == path):
                return target, text
        return None


# =================================================================================================
# One chapter's context
# =================================================================================================
@dataclass
class Chapter:
    stem: str
    source: Path
    page: Page
    glue: dict
    chapters: list                 # stems of every chapter that has a notebook edition
    citation_count: int = 0
    exercise_titles: dict = field(default_factory=dict)

    # ---- references ------------------------------------------------------------------------
    def notebook_link(self, target_html: str) -> str | None:
        """The notebook edition of the chapter a link of the page points to, or None."""
        if not target_html:
            return None
        stem = PurePosixPath(target_html).name.removesuffix(".html")
        return f"{stem}.ipynb" if stem in self.chapters and stem != self.stem else None

    def reference(self, role: str, content: str) -> str:
        from sphinx.util.nodes import split_explicit_title

        explicit, title, label = split_explicit_title(content)   # "Title <label>", as Sphinx reads it
        title = title if explicit else None
        label = label.strip()
        if role == "doc":
            path = PurePosixPath(label).name + ".html"
            found = self.page.link("", "doc", path)
            if found is None:
                raise EditionError(f"{self.stem}: no link to {label} on the built page")
            text = title or found[1]
            target = self.notebook_link(path)
            return f"[{_escape(text)}]({target})" if target else _escape(text)
        fragment = f"equation-{label}" if role == "eq" else label
        kind = {"numref": "std-numref", "ref": "std-ref"}.get(role)
        found = self.page.link(fragment, kind)
        if found is None and role == "ref":  # sphinx-exercise renders {ref} to an exercise as "Exercise N"
            found = self.page.link(fragment, "std-numref")
        if found is None:
            raise EditionError(f"{self.stem}: no {{{role}}} link to {label!r} on the built page")
        target, text = found
        if title:
            text = title.replace("%s", re.sub(r"^\D*", "", text)) if "%s" in title else title
        text = _escape(text)
        notebook = self.notebook_link(target)
        return f"[{text}]({notebook})" if notebook else text

    def citation(self, content: str) -> str:
        index = self.citation_count
        self.citation_count += 1
        if index >= len(self.page.citations):
            raise EditionError(f"{self.stem}: more citations in the source than on the built page")
        text = self.page.citations[index]
        surname = re.match(r"[a-z]*", content.split(",")[0].strip().lower()).group()[:4]
        if not surname or surname not in text.lower().replace(" ", ""):
            # the site renders keys as "Surname et al., year": the key starts with the surname
            raise EditionError(f"{self.stem}: citation {index + 1} is {text!r} on the page, "
                               f"but {content!r} in the source")
        return _escape(text)

    def glued(self, content: str) -> str:
        from myst_nb.core.variables import format_plain_text

        key, _, fmt = content.rpartition(":") if ":" in content else (content, "", "")
        if not key:
            key, fmt = content, ""
        if key not in self.glue:
            raise EditionError(f"{self.stem}: glue key {key!r} not found in the executed chapter")
        data = self.glue[key].get("data", {})
        if "text/plain" not in data:
            raise EditionError(f"{self.stem}: glue key {key!r} has no text/plain value")
        return _escape(format_plain_text(data["text/plain"], fmt or "s"))

    def title_of(self, element_id: str, fallback: str) -> str:
        return self.page.titles.get(element_id) or fallback


def _escape(text: str) -> str:
    """Text that Markdown shows literally (glued values, link texts).

    Characters Markdown or JupyterLab's math finder would read are written as HTML character
    references, not backslash escapes (JupyterLab's math finder reads ``\\$`` and ``\\(``).
    """
    text = html.escape(text, quote=False)
    return re.sub(r"[\\`*_$|]", lambda m: f"&#{ord(m.group())};", text)


# =================================================================================================
# Markdown: roles (inline) and directives (blocks), read with the build's parser (myst_reader)
# =================================================================================================
def _role(role: myst.Role, ch: Chapter) -> str:
    name, content = role.name, role.content
    if name in ("glue", "glue:text", "glue:any"):
        return ch.glued(content)
    if name in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "cite:alp", "cite:alps"):
        return ch.citation(content)
    if name in ("numref", "ref", "eq", "doc", "prf:ref", "term", "any"):
        return ch.reference(name, content)
    if name == "math":
        return f"${content}$"
    raise EditionError(f"{ch.stem}: the role {{{name}}} has no notebook translation")


def _with_roles(text: str, roles: list, ch: Chapter, offset: int = 0) -> str:
    """`text` (which starts at `offset` of the parsed text) with each role replaced by its text."""
    parts, at = [], 0
    for role in roles:
        parts += [text[at:role.start - offset], _role(role, ch)]
        at = role.end - offset
    return "".join(parts) + text[at:]


def convert_inline(text: str, ch: Chapter) -> str:
    """Inline MyST (a title, a directive's argument) -> Markdown: roles replaced, the rest kept."""
    return _with_roles(text, myst.roles(text, inline=True), ch)


def _box(kind: str, title: str, body: str) -> str:
    return f'<div class="alert alert-{kind}">\n\n<strong>{title}</strong>\n\n{body}\n\n</div>'


def _details(title: str, body: str) -> str:
    return f"<details>\n<summary><strong>{title}</strong></summary>\n\n{body}\n\n</details>"


def _literal_include(arg: str, options: dict, ch: Chapter) -> str:
    from sphinx.directives.code import LiteralIncludeReader

    path = (ch.source.parent / arg.strip()).resolve()
    if not path.is_file():
        raise EditionError(f"{ch.stem}: literalinclude of a missing file {arg}")
    config = types.SimpleNamespace(source_encoding="utf-8")
    text, _ = LiteralIncludeReader(str(path), dict(options), config).read()
    language = options.get("language") or ("python" if path.suffix == ".py" else "")
    return f"```{language}\n{text.rstrip()}\n```"


def _directive(d: myst.Directive, ch: Chapter) -> str:
    name, arg, options, content = d.name, d.argument, d.options, d.body
    inner = lambda: convert_markdown("\n".join(content), ch)  # noqa: E731
    classes = str(options.get("class", "")).split()
    if name in ADMONITIONS:
        title = convert_inline(arg, ch) if arg else name.capitalize()
        if "dropdown" in classes:
            return _details(title, inner())
        kind = next((ADMONITIONS[c] for c in classes if c in ADMONITIONS), ADMONITIONS[name])
        return _box(kind, title, inner())
    if name == "dropdown":
        return _details(convert_inline(arg, ch) or "Details", inner())
    if name == "exercise":
        label = options.get("label", "")
        fallback = f"Exercise ({arg})" if arg else "Exercise"
        title = ch.title_of(label, fallback)
        ch.exercise_titles[label] = title
        return _box("info", _escape(title), inner())
    if name.startswith("prf:"):
        kind = name[4:]
        if kind == "proof":
            return f"<div>\n\n*Proof.* {inner()} ∎\n\n</div>"
        if kind not in PROOF_KINDS:
            raise EditionError(f"{ch.stem}: the directive {{{name}}} has no notebook translation")
        fallback = kind.capitalize() + (f" ({arg})" if arg else "")
        title = ch.title_of(options.get("label", ""), fallback)
        return _box("info", _escape(title), inner())
    if name == "literalinclude":
        return _literal_include(arg, options, ch)
    if name in ("math", "equation"):
        label = options.get("label")
        tag = ch.title_of(f"equation-{label}", "").strip("()") if label else ""
        math = "\n".join(content).strip()
        return "$$\n" + math + (f"\n\\tag{{{tag}}}" if tag else "") + "\n$$"
    if name in ("code-block", "code", "sourcecode"):
        return f"```{arg}\n" + "\n".join(content) + "\n```"
    if name == "bibliography":
        return ""
    raise EditionError(f"{ch.stem}: the directive {{{name}}} has no notebook translation")


def _display_math(block: myst.Block, lines: list[str], ch: Chapter) -> str:
    """``$$ ... $$`` as written; with a label, the site's number as ``\\tag{n}``."""
    source = lines[block.start:block.end]
    if not block.label:
        return "\n".join(source)
    tag = ch.title_of(f"equation-{block.label}", "").strip("()")
    if not tag:
        raise EditionError(f"{ch.stem}: equation {block.label} has no number on the page")
    if len(source) > 1 and source[0].strip() == "$$":
        body = source[:-1]                             # the closing "$$ (label)" line goes
    else:
        body = ["$$", block.token.content.strip()]
    return "\n".join(body + [f"\\tag{{{tag}}}", "$$"])


def convert_markdown(text: str, ch: Chapter) -> str:
    """MyST Markdown -> CommonMark with HTML that JupyterLab renders.

    Prose keeps its source lines, with roles replaced; ``(label)=`` targets and ``%`` comments
    go; directives, code fences and display math become blocks of their own.
    """
    lines = text.split("\n")
    tokens = myst.parse(text)
    skipped: set[int] = set()
    blocks: dict[int, myst.Block] = {}
    for block in myst.blocks(text, tokens):
        if block.kind in ("target", "comment"):
            skipped.update(range(block.start, block.end))
        elif block.kind == "div" or (block.level and (block.kind == "directive" or block.label)):
            what = block.directive.name if block.directive else "a ::: block or labelled equation"
            raise EditionError(f"{ch.stem}: {what} at line {block.start + 1} of a Markdown cell "
                               "(inside a list or quote, or a plain ::: block) has no notebook translation")
        elif not block.level and block.kind in ("directive", "code", "math"):
            blocks[block.start] = block
    roles = myst.roles(text, tokens)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    out: list[str] = []
    prose: list[tuple[int, int]] = []              # runs of consecutive prose lines [a, b)

    def flush():
        runs = []
        for a, b in prose:
            first, stop = starts[a], starts[b] - 1
            runs.append(_with_roles(text[first:stop],
                                    [r for r in roles if first <= r.start < stop], ch, first))
        if runs:
            out.append("\n".join(runs))
        prose.clear()

    i = 0
    while i < len(lines):
        block = blocks.get(i)
        if i in skipped:
            i += 1
        elif block is not None:
            flush()
            if block.kind == "directive":
                out.append(_directive(block.directive, ch))
            elif block.kind == "math":
                out.append(_display_math(block, lines, ch))
            else:
                out.append("\n".join(lines[block.start:block.end]))   # a code fence, as written
            i = block.end
        else:
            if prose and prose[-1][1] == i:
                prose[-1] = (prose[-1][0], i + 1)
            else:
                prose.append((i, i + 1))
            i += 1
    flush()
    return re.sub(r"\n{3,}", "\n\n", "\n\n".join(part.strip("\n") for part in out if part.strip())).strip()


# =================================================================================================
# Cells
# =================================================================================================
def _split_solution_markers(text: str):
    """Yield ("text", str), ("start", label) and ("end", None) pieces of a Markdown cell."""
    lines = text.split("\n")
    at = 0
    for block in myst.blocks(text):
        name = block.directive.name if block.directive and not block.level else ""
        if name not in ("solution-start", "solution-end"):
            continue
        if block.start > at:
            yield "text", "\n".join(lines[at:block.start])
        yield ("start", block.directive.argument) if name == "solution-start" else ("end", None)
        at = block.end
    if at < len(lines):
        yield "text", "\n".join(lines[at:])


def _code_metadata(cell) -> dict:
    tags = list(cell.metadata.get("tags", []))
    meta: dict = {"tags": tags} if tags else {}
    if "remove-cell" in tags:
        meta["jupyter"] = {"source_hidden": True, "outputs_hidden": True}
    elif "hide-input" in tags or "remove-input" in tags:
        meta["jupyter"] = {"source_hidden": True}
    elif "remove-output" in tags or "hide-output" in tags:
        meta["jupyter"] = {"outputs_hidden": True}
    return meta


def _site_outputs(executed_cell) -> list:
    outputs = []
    for output in executed_cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            continue
        data = output.get("data")
        if data is not None:
            data = {k: v for k, v in data.items() if not k.startswith(DROPPED_MIME)}
            if not data or set(data) == {"text/plain"} and any(
                    k.startswith(DROPPED_MIME[0]) for k in output["data"]):
                continue                                   # a widget: only its repr is left
            output = copy.deepcopy(output)
            output["data"] = data
        outputs.append(output)
    return outputs


def _figure_caption(cell, ch: Chapter) -> str | None:
    figure = (cell.metadata.get("mystnb") or {}).get("figure") or {}
    caption = figure.get("caption")
    if not caption:
        return None
    number = ch.title_of(figure.get("name", ""), "")
    text = convert_markdown(str(caption).strip(), ch)
    return f"**{number}** {text}" if number else text


def _outline(cells: list, stem: str):
    """The chapter's cells cut at the solution markers: the solution state machine, alone.

    Yields, in order, ``("code", cell, index)`` (index: the cell's place among the chapter's code
    cells) and ``("markdown", text)`` for what is outside a solution, and, where a solution
    closes, ``("solution", label, pieces)`` with the code and markdown pieces inside it.
    """
    solution: list | None = None
    label = ""
    code_index = 0
    for cell in cells:
        if cell.cell_type == "code":
            piece = ("code", cell, code_index)
            code_index += 1
            if solution is None:
                yield piece
            else:
                solution.append(piece)
            continue
        if cell.cell_type != "markdown":
            continue
        for kind, value in _split_solution_markers(cell.source):
            if kind == "start":
                if solution is not None:
                    raise EditionError(f"{stem}: solution {value} starts inside another solution")
                solution, label = [], value
            elif kind == "end":
                if solution is None:
                    raise EditionError(f"{stem}: a solution-end without a solution-start")
                yield "solution", label, solution
                solution = None
            elif solution is not None:
                solution.append(("markdown", value))
            else:
                yield "markdown", value
    if solution is not None:
        raise EditionError(f"{stem}: solution {label} is never closed")


def _markdown_cells(text: str) -> list:
    text = text.strip()
    return [nbformat.v4.new_markdown_cell(text)] if text else []


def _code_cells(cell, executed_cell, ch: Chapter) -> list:
    """A code cell with the site's outputs (and its figure's caption as a Markdown cell)."""
    new = nbformat.v4.new_code_cell(cell.source, metadata=_code_metadata(cell))
    new.outputs = _site_outputs(executed_cell)
    new.execution_count = None
    for output in new.outputs:
        if "execution_count" in output:
            output["execution_count"] = None
    return [new, *_markdown_cells(_figure_caption(cell, ch) or "")]


def _solution_text(label: str, pieces: list, ch: Chapter) -> str:
    """A solution as one closed <details> block: its code is shown, never run."""
    parts = []
    for kind, value, *_ in pieces:
        if kind == "markdown":
            parts.append(convert_markdown(value, ch))
        elif "remove-cell" not in value.metadata.get("tags", []):
            # its remove-cell cells (glue for the solution's prose, hidden on the site too) go
            parts.append(f"```python\n{value.source.strip()}\n```")
    exercise = ch.exercise_titles.get(label)
    if exercise is None:
        raise EditionError(f"{ch.stem}: solution to {label!r} comes before its exercise")
    return _details(_escape(f"Solution to {exercise}"), "\n\n".join(parts))


def _read_chapter(stem: str, chapters: list[str]):
    """The chapter's context, its source notebook (jupytext) and its executed code cells."""
    import jupytext

    source = BOOK / f"{stem}.md"
    executed_path = EXECUTED / "book" / f"{stem}.ipynb"
    glue_path = executed_path.with_suffix(".glue.json")
    page_path = HTML / "book" / f"{stem}.html"
    for path in (executed_path, page_path):
        if not path.is_file():
            raise EditionError(f"{path} is missing: build the site first (make site)")
    glue = json.loads(glue_path.read_text()) if glue_path.is_file() else {}
    ch = Chapter(stem, source, Page.read(page_path), glue, chapters)

    nb = jupytext.read(source)
    executed = nbformat.read(executed_path, as_version=4)
    source_code = [c for c in nb.cells if c.cell_type == "code"]
    executed_code = [c for c in executed.cells if c.cell_type == "code"]
    if [c.source for c in source_code] != [c.source for c in executed_code]:
        raise EditionError(f"{stem}: the executed chapter in _build does not match {source.name}: "
                           "rebuild the site (make site)")
    return ch, nb, executed_code


def build_notebook(stem: str, chapters: list[str]) -> nbformat.NotebookNode:
    ch, nb, executed_code = _read_chapter(stem, chapters)
    cells: list = []
    for kind, *value in _outline(nb.cells, stem):
        if kind == "code":
            cell, index = value
            cells += _code_cells(cell, executed_code[index], ch)
        elif kind == "markdown":
            cells += _markdown_cells(convert_markdown(value[0], ch))
        else:
            cells += _markdown_cells(_solution_text(*value, ch))
    if ch.citation_count != len(ch.page.citations):
        raise EditionError(f"{stem}: {ch.citation_count} citations in the source, "
                           f"{len(ch.page.citations)} on the built page")

    edition = nbformat.v4.new_notebook(cells=cells)
    edition.metadata = {
        "kernelspec": dict(nb.metadata.get("kernelspec") or
                           {"display_name": "Python 3", "language": "python", "name": "python3"}),
        "language_info": {"name": "python"},
        "mha_edition": {"source": f"book/{stem}.md",
                        "note": "Generated by scripts/notebook_edition.py; edits stay here."},
    }
    nbformat.validate(edition)
    return edition


# =================================================================================================
# The whole edition
# =================================================================================================
def toc_files() -> list[str]:
    """Every page of _toc.yml in order (the root, chapters, parts, sections), without suffix.

    _toc.yml is read with sphinx-external-toc, as Jupyter Book's build reads it.
    """
    from sphinx_external_toc.api import FileItem
    from sphinx_external_toc.parsing import parse_toc_yaml

    site = parse_toc_yaml(ROOT / "_toc.yml")
    files: list[str] = []

    def walk(docname: str):
        files.append(docname)
        for tree in site[docname].subtrees:
            for item in tree.items:
                if isinstance(item, FileItem):         # not a glob or a URL
                    walk(str(item))

    walk(site.root.docname)
    return files


def chapter_stems() -> list[str]:
    """Pages of _toc.yml that are notebooks (their source has a jupytext header)."""
    stems = []
    for f in toc_files():
        path = ROOT / f"{f}.md"
        if path.parent == BOOK and path.is_file() and path.read_text().startswith("---\njupytext:"):
            stems.append(path.stem)
    return stems


def site_is_stale() -> bool:
    """True when the last site build is missing or older than the chapters or the library."""
    report = BUILD / "build-report.json"
    if not report.is_file() or json.loads(report.read_text()).get("returncode") != 0:
        return True
    built = report.stat().st_mtime
    sources = [*BOOK.rglob("*.md"), *(ROOT / "src" / "mha").rglob("*.py"),
               ROOT / "_config.yml", ROOT / "_toc.yml", ROOT / "references.bib"]
    return any(p.stat().st_mtime > built for p in sources if p.is_file())


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_edition(out: Path = OUT, force: bool = False, only=None) -> dict:
    """Write every chapter's notebook into `out`; return {stem: "written"|"kept"|"same"|"failed: why"}.

    A notebook the reader changed is kept unless `force`; `only` limits the chapters written.
    """
    stems = chapter_stems()
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    result = {}
    for stem in stems:
        if only is not None and stem not in only:
            continue
        target = out / f"{stem}.ipynb"
        try:
            text = nbformat.writes(build_notebook(stem, stems)) + "\n"
        except EditionError as exc:
            result[stem] = f"failed: {exc}"
            continue
        new_digest = hashlib.sha256(text.encode()).hexdigest()
        if target.is_file():
            current = _digest(target)
            if current == new_digest:
                result[stem] = "same"
                manifest[stem] = new_digest
                continue
            if manifest.get(stem) != current and not force:
                result[stem] = "kept"                       # the reader changed it: keep theirs
                continue
        tmp = target.with_suffix(".ipynb.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
        manifest[stem] = new_digest
        result[stem] = "written"
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="store_true",
                        help="rebuild the site first if it is older than the chapters or the library")
    parser.add_argument("--out", type=Path, default=OUT, help="folder to write (default notebooks/)")
    args = parser.parse_args(argv)
    if args.build and site_is_stale():
        print("notebook edition: the site build is missing or stale; building it first")
        code = subprocess.call([sys.executable, str(ROOT / "scripts" / "build_site.py")])
        if code:
            return code
    result = write_edition(args.out)
    failed = [what.removeprefix("failed: ") for what in result.values() if what.startswith("failed")]
    for stem, what in result.items():
        if what == "kept":
            print(f"notebook edition: kept your edited {args.out.name}/{stem}.ipynb "
                  "(delete it to get the new edition)")
    written = sum(what == "written" for what in result.values())
    print(f"notebook edition: {len(result) - len(failed)} notebooks in {args.out} ({written} written)")
    for why in failed:
        print(f"notebook edition: {why}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
