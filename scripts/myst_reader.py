"""Read the book's MyST Markdown with the parser its build uses.

The build reads every chapter with myst-parser (through myst-nb): markdown-it-py with the MyST
plugins and the extensions ``_config.yml`` enables (``parse: myst_enable_extensions``). This
module builds that same parser and answers what the scripts and tests ask of a page, so the
repository has one MyST reader and no regular expressions that guess at fences or roles:

* :func:`blocks`: the blocks of a Markdown text with their lines, each of one kind: a directive
  (a ```` ```{name} ```` or ``:::{name}`` fence, its options and body read by myst-parser's own
  directive reader), a plain code fence, a plain ``:::`` block (a div), display math
  (``$$ ... $$``, maybe with a label), a ``(label)=`` target, a ``%`` comment, or prose
  (anything else: paragraphs, lists, tables, indented code...);
* :func:`directives`: every directive of a page, those nested in other directives included, in
  the order of the text, with line numbers;
* :func:`roles`: every role (``{name}`content```) outside code, with its place in the text.

Lines count from 0 and index ``text.split("\\n")``. Used by ``scripts/notebook_edition.py`` and
``tests/test_exercise_labels.py``; nothing here knows the book's chapters.
"""
from __future__ import annotations

import bisect
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import yaml

ROOT = Path(__file__).resolve().parent.parent

# Directives whose body is literal text, not Markdown: nothing inside them is a directive.
LITERAL = frozenset({"code-cell", "raw-cell", "code", "code-block", "sourcecode", "math",
                     "raw", "literalinclude", "eval-rst"})
# Directives whose options myst-nb reads as YAML (a cell's metadata); others as myst-parser does.
YAML_OPTIONS = frozenset({"code-cell", "raw-cell"})
DIRECTIVE_TOKENS = ("fence", "colon_fence")


class MystError(ValueError):
    """The text is MyST that the build's parser reads differently from what was meant."""


# =================================================================================================
# The parser
# =================================================================================================
def extensions(config: Path = ROOT / "_config.yml") -> set[str]:
    """The MyST extensions the build enables: ``parse: myst_enable_extensions`` of _config.yml."""
    parse = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("parse") or {}
    return set(parse.get("myst_enable_extensions") or [])


def _with_span(rule):
    """An inline rule that also records where its token starts and ends in the inline text."""
    def spanned(state, silent):
        start = state.pos
        if not rule(state, silent):
            return False
        if not silent:
            state.tokens[-1].meta["span"] = (start, state.pos)
        return True

    return spanned


@functools.lru_cache(maxsize=None)
def parser():
    """myst-parser's markdown-it parser, configured like the build (roles keep their span)."""
    from markdown_it.renderer import RendererHTML
    from mdit_py_plugins.myst_role.index import myst_role
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    md = create_md_parser(MdParserConfig(enable_extensions=extensions()), RendererHTML)
    md.inline.ruler.at("myst_role", _with_span(myst_role))
    return md


def parse(text: str) -> list:
    """The markdown-it tokens of a Markdown text (a flat stream; ``token.level`` is the nesting)."""
    return parser().parse(text)


# =================================================================================================
# Directives
# =================================================================================================
class _AnyOption(dict):
    """An option spec that accepts every option and keeps its value as text (``unchanged``)."""

    def __missing__(self, key):
        from docutils.parsers.rst.directives import unchanged

        return unchanged

    def __bool__(self):
        return True


class _AnyDirective:
    """What myst-parser's directive reader needs to know of a directive it has no class for."""

    required_arguments = 0
    optional_arguments = 1
    final_argument_whitespace = True
    has_content = True
    option_spec = _AnyOption()


def _directive_class(name: str):
    if name == "literalinclude":                   # Sphinx's own option types (ints, flags)
        from sphinx.directives.code import LiteralInclude

        return LiteralInclude
    return _AnyDirective


@dataclass(frozen=True)
class Directive:
    """One ```` ```{name} argument ```` or ``:::{name} argument`` block."""

    name: str                  # "exercise", "prf:proof", "code-cell", ...
    argument: str              # the rest of the opening line, stripped
    options: dict              # ":key: value" lines or a "---" YAML block, as the build reads them
    body: list[str]            # the lines after the options (a first blank line dropped)
    line: int                  # the opening fence's line
    body_line: int             # the line of body[0]
    end: int                   # the line after the closing fence


def directive(token, offset: int = 0) -> Directive | None:
    """The directive a ``fence`` or ``colon_fence`` token opens (None for a plain code fence).

    `offset` is added to every line number (for a text that starts inside another one).
    """
    from docutils.parsers.rst.states import MarkupError
    from myst_parser.parsers.directives import parse_directive_text

    if token.type not in DIRECTIVE_TOKENS:
        return None
    parts = token.info.strip().split(maxsplit=1)
    name = parts[0] if parts else ""
    if not (name.startswith("{") and name.endswith("}")):
        return None
    name, argument = name[1:-1], parts[1].strip() if len(parts) > 1 else ""
    line = offset + token.map[0]
    content, shift = token.content, 0
    if token.type == "colon_fence" and content.startswith(":::"):
        content, shift = "\n" + content, -1        # a nested fence is not an option (as myst-parser)
    try:
        result = parse_directive_text(_directive_class(name), argument, content,
                                      validate_options=name not in YAML_OPTIONS)
    except MarkupError as exc:
        raise MystError(f"line {line + 1}: {{{name}}}: {exc}") from None
    if result.warnings:
        raise MystError(f"line {line + 1}: {{{name}}}: {result.warnings[0].msg}")
    return Directive(name, argument, dict(result.options), list(result.body), line,
                     line + 1 + result.body_offset + shift, offset + token.map[1])


def directives(text: str, offset: int = 0) -> Iterator[Directive]:
    """Every directive of `text` in order, with those inside a directive's Markdown body."""
    for token in parse(text):
        found = directive(token, offset)
        if found is None:
            continue
        yield found
        if found.name not in LITERAL:
            yield from directives("\n".join(found.body), found.body_line)


# =================================================================================================
# Blocks
# =================================================================================================
@dataclass(frozen=True)
class Block:
    """One block of a Markdown text: lines ``start`` to ``end`` (excluded)."""

    kind: str                  # "directive", "code", "div", "math", "target", "comment", "prose"
    start: int
    end: int
    level: int                 # 0 at the top, more inside lists, quotes and other containers
    token: object
    directive: Directive | None = None
    label: str = ""            # a "math" block's label: $$ ... $$ (label)


def blocks(text: str, tokens: list | None = None) -> list[Block]:
    """The blocks of `text`, in order: every top-level block, and every nested block that is not
    prose (a target or directive inside a list is listed twice: as part of the list's prose, and
    on its own with ``level > 0``)."""
    found = []
    for token in parse(text) if tokens is None else tokens:
        if token.map is None or token.nesting == -1:
            continue
        start, end = token.map
        found_directive = directive(token)
        if found_directive is not None:
            kind = "directive"
        else:
            kind = {"myst_target": "target", "myst_line_comment": "comment", "fence": "code",
                    "colon_fence": "div", "math_block": "math",
                    "math_block_label": "math"}.get(token.type, "prose")
        if kind == "prose" and token.level > 0:
            continue
        label = token.info if token.type == "math_block_label" else ""
        found.append(Block(kind, start, end, token.level, token, found_directive, label))
    return found


# =================================================================================================
# Roles
# =================================================================================================
@dataclass(frozen=True)
class Role:
    """One ``{name}`content``` role: ``text[start:end]`` is its source."""

    name: str
    content: str               # as myst-parser reads it (a line break inside is a space)
    start: int
    end: int


@dataclass
class _Lines:
    text: str
    starts: list = field(default_factory=list)     # offset of each line in text
    used: dict = field(default_factory=dict)       # line -> column after the last placed cell

    def __post_init__(self):
        offset = 0
        for line in self.text.split("\n"):
            self.starts.append(offset)
            offset += len(line) + 1

    def line(self, i: int) -> str:
        end = self.starts[i + 1] - 1 if i + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[i]:end]

    def place(self, piece: str, i: int, in_cell: bool) -> int:
        """Offset in text of `piece`, one line of an inline token's content, on line i.

        A paragraph's line is its source line without the indentation and container markers
        (a suffix of it); a table cell is found after the cells before it on that line.
        """
        raw, piece = self.line(i).rstrip(), piece.rstrip()
        if not in_cell and raw.endswith(piece):
            column = len(raw) - len(piece)
        else:
            column = raw.find(piece, self.used.get(i, 0))
            if column < 0:
                raise MystError(f"line {i + 1}: cannot find {piece!r} in {raw!r}")
        self.used[i] = column + len(piece)
        return self.starts[i] + column


def _inline_roles(inline, place) -> Iterator[tuple[Role, str]]:
    """The roles of one inline token (offsets given by place(content offset)), with their source."""
    for child in inline.children or []:
        if child.type == "myst_role":
            s, e = child.meta["span"]
            yield Role(child.meta["name"], child.content, place(s), place(e - 1) + 1), inline.content[s:e]


def roles(text: str, tokens: list | None = None, inline: bool = False) -> list[Role]:
    """Every role of `text` outside code (code spans, fences, math), in order.

    With ``inline=True`` `text` is read as inline text only (a directive's argument, a title).
    """
    if inline:
        tokens = parser().parseInline(text)
        return [role for token in tokens for role, _ in _inline_roles(token, lambda pos: pos)]
    tokens = parse(text) if tokens is None else tokens
    lines = _Lines(text)
    found = []
    for index, token in enumerate(tokens):
        if token.type != "inline":
            continue
        in_cell = index > 0 and tokens[index - 1].type in ("th_open", "td_open")
        if not in_cell and not any(c.type == "myst_role" for c in token.children or []):
            continue                               # (every cell is placed: the next starts after it)
        if token.map is None:
            raise MystError(f"inline text without a line map: {token.content!r}")
        pieces = token.content.split("\n")
        piece_starts, offset = [], 0
        for piece in pieces:
            piece_starts.append(offset)
            offset += len(piece) + 1
        placed = [lines.place(piece, token.map[0] + j, in_cell) for j, piece in enumerate(pieces)]

        def place(pos, piece_starts=piece_starts, placed=placed):
            j = bisect.bisect_right(piece_starts, pos) - 1
            return placed[j] + pos - piece_starts[j]

        for role, source in _inline_roles(token, place):
            if text[role.start:role.end].split() != source.split():
                raise MystError(f"cannot place the role {source!r} in the text")
            found.append(role)
    return found
