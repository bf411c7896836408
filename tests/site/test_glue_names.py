"""Glue names, read from the chapter sources without building: each glued once, each one the prose uses glued.

myst-nb warns about a name glued twice (and the strict build then fails); a name the prose uses
but no cell glues fails only at build time. Both are cheaper to catch here.
"""
import re
from pathlib import Path

import pytest

from conftest import toc_files

ROOT = Path(__file__).resolve().parents[2]
GLUED = re.compile(r"""\b(?:glue|keep)\(\s*(f?)["']([A-Za-z0-9_{}.\[\]'" ]+?)["']""")
USED = re.compile(r"\{glue:(?:text|any|figure|math)\}`([A-Za-z0-9_]+)")


def _glued(text):
    literal, patterns = [], []
    for is_f, name in GLUED.findall(text):
        if is_f and "{" in name:
            patterns.append(re.compile("^" + re.sub(r"\\\{[^}]*\\\}", "[A-Za-z0-9_]+", re.escape(name)) + "$"))
        else:
            literal.append(name)
    return literal, patterns


CHAPTERS = [page for page in toc_files() if "glue" in (ROOT / f"{page}.md").read_text()]


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_glue_name_is_glued_once(page):
    literal, _ = _glued((ROOT / f"{page}.md").read_text())
    twice = sorted({name for name in literal if literal.count(name) > 1})
    assert not twice, f"{page}: glued more than once: {twice}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_every_name_the_prose_uses_is_glued(page):
    text = (ROOT / f"{page}.md").read_text()
    literal, patterns = _glued(text)
    missing = sorted({name for name in USED.findall(text)
                      if name not in literal and not any(p.match(name) for p in patterns)})
    assert not missing, f"{page}: the prose uses glue names no cell glues (by a literal or f-string name): {missing}"
