#!/usr/bin/env python3
"""Build and execute one chapter, for its author: ``make chapter CH=03`` (or ``python scripts/build_chapter.py 03``).

The chapter is executed afresh and rendered with the book's own ``_config.yml`` through a
table of contents of that chapter and the references page, into ``_build/chapter/NN/html``. Warnings are printed, except those
that only say another chapter is missing (links to the rest of the book cannot resolve in a
one-page build); the strict check of the whole book stays ``make site``. Exits non-zero if a
cell raises, writes to stderr, or any other warning appears.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARNING = re.compile(r"(WARNING|ERROR|CRITICAL)\b|Traceback \(most recent call last\)")
# In a one-page build, references to the other pages cannot resolve: not the author's problem.
OTHER_PAGES = re.compile(r"unknown document|undefined label|term not in glossary|equation not found|"
                         r"Failed to create a cross reference|not included in any toctree|"
                         r"toctree contains reference to nonexisting document|"
                         r"Kernel is running over TCP without encryption")


def chapter_file(arg: str) -> Path:
    matches = sorted((ROOT / "book").glob(f"{arg}*.md")) if arg else []
    if len(matches) != 1:
        names = ", ".join(p.stem for p in sorted((ROOT / "book").glob("[0-9]*.md")))
        sys.exit(f"name one chapter by its number or name (CH=03 or CH=03_splitting); chapters: {names}")
    return matches[0]


def main(argv) -> int:
    page = chapter_file(argv[1] if len(argv) > 1 else "")
    out = ROOT / "_build" / "chapter" / page.stem
    shutil.rmtree(out, ignore_errors=True)  # a fresh build, so the chapter really executes again
    out.mkdir(parents=True)
    toc = out / "_toc.yml"
    # The references page comes along (it executes nothing), so citations resolve.
    toc.write_text(f"format: jb-book\nroot: book/{page.stem}\nchapters:\n  - file: book/references\n")
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(ROOT), "--toc", str(toc), "--path-output", str(out), "--keep-going"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in (proc.stdout + proc.stderr).splitlines()]
    (out / "build.log").write_text("\n".join(plain) + "\n")
    problems = [line for line in plain if WARNING.search(line) and not OTHER_PAGES.search(line)]
    for line in problems:
        print(line)
    html = out / "_build" / "html" / "book" / f"{page.stem}.html"
    print(f"{page.name}: built in {seconds:.1f} s, exit {proc.returncode}, {len(problems)} warning lines; "
          f"open {html}  (full log: {out / 'build.log'})")
    return 1 if proc.returncode or problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
