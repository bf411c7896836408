#!/usr/bin/env python3
"""Build the book from scratch, strictly, and write a report the tests read.

Runs ``jupyter-book build . -W -n --keep-going`` on a clean ``_build`` (every chapter
executes afresh), streams its output, saves it to ``_build/build.log`` and writes
``_build/build-report.json`` with the exit code, the seconds taken, every warning line, the
size of the site and the seconds myst-nb took to execute each chapter (its kernel's start and
shutdown included), which it also prints at the end. Exits with jupyter-book's exit code (and 1 if any warning slipped by).

Usage: ``python scripts/build_site.py``
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
WARNING = re.compile(r"(WARNING|ERROR|CRITICAL)\b|Traceback \(most recent call last\)")
# The kernel's own notice about its local TCP transport is not a warning about the book.
KERNEL_NOTICE = "Kernel is running over TCP without encryption"
EXECUTED = re.compile(r"^(?P<path>\S+)\.(?:md|ipynb): Executed notebook in (?P<seconds>[0-9.]+) seconds")


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def executed_seconds(lines: list[str]) -> dict[str, float]:
    """The seconds myst-nb reports for each notebook it executed, by page (``book/06_how_many_heads``)."""
    times = {}
    for line in lines:
        match = EXECUTED.match(line)
        if match:
            page = Path(match["path"])
            if page.is_absolute() and page.is_relative_to(ROOT):
                page = page.relative_to(ROOT)
            times[page.as_posix()] = float(match["seconds"])
    return times


def main() -> int:
    shutil.rmtree(BUILD, ignore_errors=True)
    BUILD.mkdir()
    jb = Path(sys.executable).with_name("jupyter-book")
    cmd = [str(jb), "build", str(ROOT), "-W", "-n", "--keep-going"]
    env = {**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    env.pop("MPLBACKEND", None)  # the kernels must use the inline backend, or figures vanish
    start = time.perf_counter()
    lines = []
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line)
    seconds = time.perf_counter() - start
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip("\n") for line in lines]
    warnings = [line for line in plain if WARNING.search(line) and KERNEL_NOTICE not in line]
    html = BUILD / "html"
    report = {
        "command": " ".join(["jupyter-book"] + cmd[1:]),
        "returncode": proc.returncode,
        "seconds": round(seconds, 1),
        "warnings": warnings,
        "site_bytes": folder_bytes(html) if html.is_dir() else 0,
        "pages": sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")) if html.is_dir() else [],
        "executed_seconds": executed_seconds(plain),
    }
    (BUILD / "build.log").write_text("\n".join(plain) + "\n")
    (BUILD / "build-report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nbuild: exit {proc.returncode}, {seconds:.1f} s, {len(warnings)} warning lines, "
          f"site {report['site_bytes'] / 1e6:.1f} MB in {html}")
    print("chapters executed (s, kernel start and shutdown included): "
          + ", ".join(f"{Path(page).name.split('_')[0]} {t:.1f}" for page, t in report["executed_seconds"].items()))
    if proc.returncode == 0 and warnings:
        print("warnings found in the build output:\n" + "\n".join(warnings), file=sys.stderr)
        return 1
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
