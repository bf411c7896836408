"""mha: the shared NumPy library of "Multi-Head Attention, Interactively".

Every chapter imports this package; nothing in the book re-implements it.
The core functions live at the top level; the topic modules (``mha.examples``,
``mha.checks``, ``mha.rank``, ``mha.costs``, ``mha.plotting``, ``mha.widgets``, ...)
are imported the first time they are used, so ``import mha`` stays light.
"""

import importlib

from .attention import *  # noqa: F403 - the core functions, listed once: attention.__all__
from .attention import __all__

__version__ = "0.1.0"


# Top-level names defined in topic modules, loaded on first use.
_LAZY = {"attention_backward": "backward", "attention_chunked": "chunked", "head_entropy": "stats"}


def __getattr__(name):
    # Submodules on first use: `mha.rank` works without `import mha.rank`.
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as err:
        if err.name == f"{__name__}.{name}":
            raise AttributeError(f"module 'mha' has no attribute {name!r}") from None
        raise
