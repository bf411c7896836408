"""scripts/myst_reader.py reads MyST as the build does: roles, blocks and directives with their lines.

The notebook edition (tests/test_notebooks.py) and the exercise wiring (tests/test_exercise_labels.py)
check the reader on the book itself; these cases cover what the book does not use yet.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import myst_reader as myst  # noqa: E402


def sources(text: str) -> list[str]:
    return [text[role.start:role.end] for role in myst.roles(text)]


@pytest.mark.parametrize(("text", "expected"), [
    # code spans, fences and escapes are not roles; a role may wrap to the next line
    ("A {glue}`a` and `{glue}`b`` then \\{glue}`c` and {numref}`Figure %s\n<fig-x>`.",
     ["{glue}`a`", "{numref}`Figure %s\n<fig-x>`"]),
    ("```python\n{glue}`not`\n```\n\n$$\n{glue}`nor`\n$$\n", []),
    # lists, quotes and definition lists: the source line keeps its markers
    ("- one {glue}`a`\n  two {eq}`b`\n\n> - quoted {glue}`c`\n>   more {glue}`d`\n\nTerm\n: def {cite:p}`e`\n",
     ["{glue}`a`", "{eq}`b`", "{glue}`c`", "{glue}`d`", "{cite:p}`e`"]),
    # a table cell is found after the cells before it, even when an earlier cell holds its text
    ("| `{glue}`x`` | {glue}`x` |\n|--|--|\n| a | b {eq}`c` |\n", ["{glue}`x`", "{eq}`c`"]),
])
def test_roles_are_found_where_the_parser_sees_them(text, expected):
    assert sources(text) == expected


def test_a_role_in_a_table_is_placed_in_its_own_cell():
    text = "| `{glue}`x`` | {glue}`x` |\n|--|--|\n"
    (role,) = myst.roles(text)
    assert role.start > text.index(" | {")
    assert (role.name, role.content) == ("glue", "x")


def test_inline_roles_of_a_title():
    roles = myst.roles("Bound {eq}`eq-a` and `{eq}`code``", inline=True)
    assert [(r.name, r.content, r.start, r.end) for r in roles] == [("eq", "eq-a", 6, 16)]


def test_blocks_give_kinds_lines_and_labels():
    text = ("(target)=\n# Title\n% a comment\n\n$$\nx\n$$ (eq-x)\n\n```python\ncode\n```\n\n"
            ":::{note} Title\n:class: dropdown\nBody.\n:::\n\n- item\n\n  (nested)=\n")
    found = [(b.kind, b.start, b.end, b.level) for b in myst.blocks(text)]
    assert found == [
        ("target", 0, 1, 0), ("prose", 1, 2, 0), ("comment", 2, 3, 0), ("math", 4, 7, 0),
        ("code", 8, 11, 0), ("directive", 12, 16, 0), ("prose", 17, 20, 0), ("target", 19, 20, 2),
    ]
    math, note = myst.blocks(text)[3], myst.blocks(text)[5]
    assert math.label == "eq-x"
    assert (note.directive.name, note.directive.argument, note.directive.options,
            note.directive.body, note.directive.body_line) == ("note", "Title", {"class": "dropdown"}, ["Body."], 14)


def test_directives_are_read_with_their_options_and_nested_ones_are_found():
    text = ("````{admonition} Outer\n:class: tip\n\n```{code-cell} ipython3\n---\ntags: [remove-cell]\n---\n"
            "x = 1\n```\n````\n\n```{literalinclude} ../src/mha/attention.py\n:pyobject: _attend\n:dedent: 4\n```\n")
    outer, cell, include = myst.directives(text)
    assert (outer.name, outer.options, outer.line, outer.end) == ("admonition", {"class": "tip"}, 0, 10)
    assert (cell.name, cell.options, cell.body, cell.line, cell.body_line) == (
        "code-cell", {"tags": ["remove-cell"]}, ["x = 1"], 3, 7)
    assert include.options == {"pyobject": "_attend", "dedent": 4}   # Sphinx's own option types


def test_a_directive_the_build_would_reject_is_an_error():
    with pytest.raises(myst.MystError, match="line 1"):
        list(myst.directives("```{literalinclude}\n:pyobject: f\n```\n"))   # no file argument
