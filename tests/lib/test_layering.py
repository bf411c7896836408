"""The library's layers, read from its source: only the UI draws, and the mathematics never needs the UI.

* Only ``mha.plotting`` and the modules of ``mha.widgets`` import matplotlib or ipywidgets.
* No module outside ``mha.widgets`` imports ``mha.widgets``.

Every ``.py`` file under ``src/mha`` is parsed with ``ast`` (nothing is imported), so an import
inside a function, a relative import and ``importlib.import_module("...")`` all count.
"""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
DRAWING = ("matplotlib", "ipywidgets")


def module_name(path):
    """``src/mha/widgets/floor.py`` -> ``mha.widgets.floor``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source, module, is_package=False):
    """Every module that ``source`` (the text of ``module``) imports, as absolute dotted names.

    ``from X import n`` counts as importing ``X`` and ``X.n`` (``n`` may be a submodule).
    """
    package = module if is_package else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            names.add(target)
            names.update(f"{target}.{alias.name}" for alias in node.names)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                   or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__")))):
            names.add(node.args[0].value)
    return names


def is_in(name, package):
    return name == package or name.startswith(package + ".")


def library():
    files = sorted((SRC / "mha").rglob("*.py"))
    return {module_name(p): imported(p.read_text(encoding="utf-8"), module_name(p), p.name == "__init__.py")
            for p in files}


def is_ui(module):
    return module == "mha.plotting" or is_in(module, "mha.widgets")


def test_only_widgets_and_plotting_import_matplotlib_or_ipywidgets():
    imports = library()
    drawing = {m for m, names in imports.items() if any(is_in(n, top) for n in names for top in DRAWING)}
    assert drawing - {m for m in drawing if is_ui(m)} == set(), "modules outside the UI that draw"
    # The scan sees the UI itself, so an empty result above means something.
    assert {"mha.plotting", "mha.widgets.frames", "mha.widgets.browser"} <= drawing


def test_the_mathematics_never_imports_the_widgets():
    imports = library()
    upward = {m: sorted(n for n in names if is_in(n, "mha.widgets"))
              for m, names in imports.items() if not is_in(m, "mha.widgets")}
    assert {m: names for m, names in upward.items() if names} == {}
    assert any(is_in(n, "mha.widgets") for n in imports["mha.widgets"])  # the package's own re-exports are seen


@pytest.mark.parametrize("source, module, expected", [
    ("import matplotlib.pyplot as plt", "mha.rank", "matplotlib.pyplot"),
    ("from ipywidgets.widgets.widget_string import HTMLStyle", "mha.rank", "ipywidgets.widgets.widget_string"),
    ("def f():\n    from matplotlib import colors", "mha.rank", "matplotlib"),
    ("import importlib\nimportlib.import_module('ipywidgets')", "mha.rank", "ipywidgets"),
    ("__import__('matplotlib')", "mha.rank", "matplotlib"),
    ("from .widgets import q_sweep", "mha.rank", "mha.widgets"),
    ("from . import widgets", "mha.rank", "mha.widgets"),
    ("from ..widgets.frames import canvas_png", "mha.checks.core", "mha.widgets.frames"),
    ("from mha import widgets", "mha.checks.core", "mha.widgets"),
    ("from .frames import FramePainter", "mha.widgets.floor", "mha.widgets.frames"),
    ("from .frames import FramePainter", "mha.widgets", "mha.widgets.frames"),
])
def test_the_scan_sees_every_form_of_import(source, module, expected):
    assert expected in imported(source, module, is_package=module == "mha.widgets")
